/**
 * `frost ...args` run in this process: every command registered as clients/cli/main.ts registers them, with
 * main.ts's handling of an error (`frost: MESSAGE` on stderr, exit 1, or an interrupted run's 130/143) and
 * commander's usage errors, stdout and stderr captured. The same flag parsing, config and command as
 * bin/frost.js, without a child's start-up (~4 s of CPU: tsx and tfjs); for tests of what a command does,
 * not of the process around it (signals, exit statuses as the shell sees them).
 *
 * (Reconstructed by the helper of experiment-*.test.ts, score-cli.test.ts and friends after it overwrote this
 * file by mistake at 03:02; the code is the original's, from tsx's compile cache; its comments are not.)
 */
import { Command, CommanderError } from 'commander';
import { commands } from '../../clients/cli/commands/index.ts';
import { ExperimentInterrupted } from '../../experiments/live-children.ts';
import { TrainingInterrupted } from '../../train/interrupt.ts';
import { FROST_BIN } from './frost-cli.ts';

export interface InProcessRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** The name the first version of this file gave InProcessRun; tests import both. */
export type FrostRun = InProcessRun;

let running = false;

/** Runs `frost ...args` in this process; one at a time, as it captures process.stdout. */
export async function frostInProcess(args: readonly string[]): Promise<InProcessRun> {
  if (running) throw new Error('frostInProcess runs one command at a time (it captures process.stdout)');
  running = true;
  const printed = { stdout: '', stderr: '' };
  // As main.ts builds the program, but throwing where commander would exit.
  const program = new Command('frost')
    .exitOverride()
    .showHelpAfterError('(frost --help, or frost COMMAND --help, for usage)')
    .configureOutput({ writeOut: (s) => (printed.stdout += s), writeErr: (s) => (printed.stderr += s) });
  for (const register of commands) register(program);
  const restore = [
    capture(process.stdout, (s) => (printed.stdout += s)),
    capture(process.stderr, (s) => (printed.stderr += s)),
  ];
  // Commands read the command line as typed (frost train records it in the run's config).
  const argv = process.argv;
  process.argv = [process.execPath, FROST_BIN, ...args];
  let code = 0;
  try {
    await program.parseAsync([...args], { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) code = err.exitCode;
    else {
      printed.stderr += `frost: ${err instanceof Error ? err.message : String(err)}\n`;
      code = err instanceof TrainingInterrupted || err instanceof ExperimentInterrupted ? err.exitCode : 1;
    }
  } finally {
    process.argv = argv;
    for (const undo of restore) undo();
    running = false;
  }
  return { code, ...printed };
}

/**
 * Collects what is written to `stream` as text; anything else (the test runner's serialised events on stdout)
 * goes through. Returns the undo.
 */
function capture(stream: NodeJS.WriteStream, into: (s: string) => void): () => void {
  const write = stream.write;
  stream.write = function (chunk: unknown, ...rest: unknown[]) {
    if (typeof chunk !== 'string') return (write as (...a: unknown[]) => boolean).call(stream, chunk, ...rest);
    into(chunk);
    const done = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
    done?.();
    return true;
  } as typeof stream.write;
  return () => {
    stream.write = write;
  };
}
