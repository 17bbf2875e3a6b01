import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { REPO_ROOT } from '../../train/data/paths.ts';

const CLI = join(REPO_ROOT, 'bin', 'frost.js');
/** How much of a failed command's log its error quotes. */
const LOG_TAIL = 2000;

/**
 * Runs `frost ...argv` in a child process with extra environment variables, its output going to
 * `logFile` (appended). Training runs are separate processes so several can run side by side, each with its
 * own tfjs engine and thread count.
 * @throws Error with the command, exit code, log path and the log's tail when it fails
 */
export async function runFrost(argv: string[], env: Record<string, string>, logFile: string): Promise<void> {
  await mkdir(dirname(logFile), { recursive: true });
  // Appended: a resumed run's log keeps what its earlier sessions wrote.
  const log = createWriteStream(logFile, { flags: 'a' });
  log.write(`--- frost ${argv.join(' ')} (${new Date().toISOString()})\n`);
  const code = await new Promise<number | null>((done, fail) => {
    const child = spawn(process.execPath, [CLI, ...argv], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.pipe(log, { end: false });
    child.stderr.pipe(log, { end: false });
    child.on('error', fail);
    child.on('close', done);
  });
  await new Promise<void>((done) => log.end(done));
  if (code !== 0) {
    const tail = (await readFile(logFile, 'utf8').catch(() => '')).slice(-LOG_TAIL);
    throw new Error(`frost ${argv.join(' ')} exited with ${code} (log: ${logFile}):\n${tail}`);
  }
}
