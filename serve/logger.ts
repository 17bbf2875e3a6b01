/**
 * Structured logs: one JSON object per line (pino), so request ids, latencies and error codes can
 * be queried rather than grepped.
 */
import { pino, type Logger } from 'pino';

export type { Logger } from 'pino';

/**
 * A logger writing JSON lines to `sink` (one call per line, without the newline), or to stderr.
 * Writes are synchronous: a crash must not lose the lines that explain it.
 */
export function createLogger(sink?: (line: string) => void, level = 'info'): Logger {
  const options = { level, base: { name: 'frost-serve' }, timestamp: pino.stdTimeFunctions.isoTime };
  if (!sink) return pino(options, pino.destination({ fd: 2, sync: true }));
  return pino(options, { write: (chunk: string) => sink(chunk.endsWith('\n') ? chunk.slice(0, -1) : chunk) });
}
