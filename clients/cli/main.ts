import { Command } from 'commander';
import { ExperimentInterrupted } from '../../experiments/live-children.ts';
import { TrainingInterrupted } from '../../train/interrupt.ts';
import { commandsFor } from './commands/loaders.ts';

const program = new Command('frost')
  .description('Train text generators with frozen output layers, export them to ONNX, serve them.')
  .showHelpAfterError('(frost --help, or frost COMMAND --help, for usage)');

for (const register of await commandsFor(process.argv)) register(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`frost: ${message}\n`);
  // An interrupted training run saved where it was: no stack, and the shell's status for its signal (130, 143).
  // Likewise an experiment whose trainers a signal stopped (experiments/live-children.ts).
  if (err instanceof TrainingInterrupted || err instanceof ExperimentInterrupted) process.exit(err.exitCode);
  if (process.env.FROST_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
