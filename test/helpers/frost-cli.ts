import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The CLI as users run it: bin/frost.js, through tsx. */
export const FROST_BIN = fileURLToPath(new URL('../../bin/frost.js', import.meta.url));

export interface FrostExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  /** Whether `last` existed when the interrupting signal was sent. */
  savedBefore?: boolean;
}

/** A `frost` child process: its stderr so far, and its exit. */
export interface RunningFrost {
  child: ChildProcess;
  stderr(): string;
  exited: Promise<FrostExit>;
}

/** Starts `frost ...args` in a child process (stdout ignored, stderr collected). */
export function startFrost(args: string[], env: Record<string, string> = {}): RunningFrost {
  const child = spawn(process.execPath, [FROST_BIN, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<FrostExit>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stderr }));
  });
  return { child, stderr: () => stderr, exited };
}

/**
 * Runs `frost ...args`; with `interrupt`, sends its signal once stderr matches `when` (the first progress
 * line of a session comes after its first update), first closing stderr's read end with `closeStderr`.
 */
export function frost(
  args: string[],
  interrupt?: { signal: NodeJS.Signals; when: RegExp; runDir: string; closeStderr?: boolean },
): Promise<FrostExit> {
  const running = startFrost(args);
  let savedBefore: boolean | undefined;
  if (interrupt)
    running.child.stderr!.on('data', () => {
      if (savedBefore !== undefined || !interrupt.when.test(running.stderr())) return;
      savedBefore = existsSync(join(interrupt.runDir, 'checkpoints', 'last'));
      if (interrupt.closeStderr) running.child.stderr!.destroy();
      running.child.kill(interrupt.signal);
    });
  return running.exited.then((exit) => ({ ...exit, savedBefore }));
}

/** Whether process `pid` still runs (signal 0 checks without sending anything). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/**
 * `frost train` of the tiny preset for two epochs of 4-sentence batches on the wasm backend, as the tests that stop
 * a trainer run it; `extra` flags go before `--out`.
 */
export function tinyTrainArgs(dataDir: string, runDir: string, extra: string[] = []): string[] {
  return [
    'train',
    ...['--data', dataDir, '--preset', 'tiny', '--epochs', '2', '--batch-size', '4', '--val-sentences', '16'],
    ...['--backend', 'wasm', ...extra, '--out', runDir],
  ];
}
