import { createWriteStream, mkdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { REPO_ROOT } from '../train/data/paths.ts';
import { ExperimentInterrupted, liveChildren } from './live-children.ts';

const CLI = join(REPO_ROOT, 'bin', 'frost.js');
/** How much of a failed command's log its error quotes. */
const LOG_TAIL = 2000;

/**
 * Runs `frost ...argv` in a child process with extra environment variables, its output going to
 * `logFile` (appended). Training runs are separate processes so several can run side by side, each with its
 * own tfjs engine and thread count. The child is one of `liveChildren`, so a signal to `frost experiment`
 * reaches it (experiments/live-children.ts).
 * @throws ExperimentInterrupted when the experiment was stopped by a signal, before the child started or
 *   when it exited after that signal without finishing
 * @throws Error with the command, exit code, log path and the log's tail when it fails
 */
export async function runFrost(
  argv: string[],
  env: Record<string, string>,
  logFile: string,
  name = `frost ${argv.join(' ')}`,
): Promise<void> {
  // Synchronous up to the spawn, so runs started in one tick start in that order, and a signal's notice
  // names them in the experiment's order (an awaited mkdir let them race).
  mkdirSync(dirname(logFile), { recursive: true });
  liveChildren.refuseAfterStop(name);
  // Appended: a resumed run's log keeps what its earlier sessions wrote.
  const log = createWriteStream(logFile, { flags: 'a' });
  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done, fail) => {
    const child = liveChildren.spawn(name, process.execPath, [CLI, ...argv], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    log.write(`--- frost ${argv.join(' ')} (${new Date().toISOString()}, pid ${child.pid})\n`);
    child.stdout!.pipe(log, { end: false });
    child.stderr!.pipe(log, { end: false });
    child.on('error', fail);
    child.on('close', (code, signal) => done({ code, signal }));
  }).finally(() => new Promise<void>((done) => log.end(done)));
  if (exit.code === 0) return;
  const stopped = liveChildren.signal;
  if (stopped) throw new ExperimentInterrupted(stopped, `${name}: stopped by ${stopped} (log: ${logFile})`);
  const tail = (await readFile(logFile, 'utf8').catch(() => '')).slice(-LOG_TAIL);
  const how = exit.code === null ? `was killed by ${exit.signal}` : `exited with ${exit.code}`;
  throw new Error(`frost ${argv.join(' ')} ${how} (log: ${logFile}):\n${tail}`);
}
