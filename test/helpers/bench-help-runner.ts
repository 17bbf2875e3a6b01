/**
 * The child process of bench-help.ts: loads each bench file given (JSON `[[path, url], ...]` as its one
 * argument) as a user's `node --import tsx FILE --help` would, one after the other, with process.exit
 * stubbed to end only that file's run and stdout and stderr captured; prints the results as one JSON line.
 * A file, not `node -e`: parseArgs reads a command line differently under -e.
 */
import type { BenchHelp } from './bench-help.ts';

class Exit {
  constructor(readonly code: number) {}
}

const files = JSON.parse(process.argv[2]!) as [string, string][];
const { stdout, stderr } = process;
const realWrite = { stdout: stdout.write, stderr: stderr.write };
const realExit = process.exit;
const results: Record<string, BenchHelp> = {};
for (const [file, url] of files) {
  const out: BenchHelp = { status: 0, stdout: '', stderr: '' };
  for (const key of ['stdout', 'stderr'] as const)
    process[key].write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      out[key] += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
      (rest.find((r) => typeof r === 'function') as (() => void) | undefined)?.();
      return true;
    }) as typeof stdout.write;
  process.exit = ((code?: number) => {
    throw new Exit(Number(code ?? process.exitCode ?? 0));
  }) as typeof process.exit;
  process.argv = [process.execPath, file, '--help'];
  try {
    await import(url);
  } catch (err) {
    if (err instanceof Exit) out.status = err.code;
    else {
      out.status = 1;
      out.stderr += `${err instanceof Error ? err.stack : String(err)}\n`;
    }
  }
  results[file] = out;
}
stdout.write = realWrite.stdout;
stderr.write = realWrite.stderr;
process.exit = realExit;
stdout.write(`${JSON.stringify(results)}\n`, () => process.exit(0));
