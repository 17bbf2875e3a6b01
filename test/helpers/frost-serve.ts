import { type ChildProcessByStdio, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { Readable } from 'node:stream';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'frost.js');

/** `frost serve` in a child process: its URL once it listens, and every line it has logged so far. */
export interface FrostServeProcess {
  child: ChildProcessByStdio<null, null, Readable>;
  url: string;
  log: string[];
}

/**
 * Starts `frost serve ...args` (bin/frost.js, as a user runs it) and resolves once it logs that it
 * listens. Rejects with the log when the process exits first, so a startup failure shows its reason.
 */
export function startFrostServe(args: string[]): Promise<FrostServeProcess> {
  const child = spawn(process.execPath, [BIN, 'serve', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  const log: string[] = [];
  return new Promise((resolve, reject) => {
    let buf = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      buf += chunk;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        log.push(line);
        try {
          const rec = JSON.parse(line) as { msg?: string; url?: string };
          if (rec.msg === 'frost serve listening' && rec.url) resolve({ child, url: rec.url, log });
        } catch {
          // not JSON: an early failure message, kept in the log
        }
      }
    });
    child.once('exit', (code) => reject(new Error(`frost serve exited with ${code}: ${log.join('\n')}`)));
  });
}
