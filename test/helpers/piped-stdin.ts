/**
 * Text piped into a command that runs in this process (frost-in-process.ts): `frost score -` and `frost bleu` read
 * process.stdin, which a test process does not have piped.
 */
import { Readable } from 'node:stream';

/** Runs `fn` with `text` as this process's stdin (not a TTY, ending after `text`), then puts the real one back. */
export async function withStdin<T>(text: string, fn: () => Promise<T>): Promise<T> {
  const real = Object.getOwnPropertyDescriptor(process, 'stdin')!;
  Object.defineProperty(process, 'stdin', { value: Readable.from([Buffer.from(text)]), configurable: true });
  try {
    return await fn();
  } finally {
    Object.defineProperty(process, 'stdin', real);
  }
}
