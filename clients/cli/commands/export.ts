import { type Command, Option } from 'commander';
import { resolve } from 'node:path';
import { exportRun } from '../../../export/export-run.ts';
import { initBackend } from '../../../train/backend/select.ts';

export function registerExport(program: Command): void {
  program
    .command('export')
    .description('export a training run to ONNX (encoder + decoder step) with a model card')
    .argument('<run>', 'run folder written by `frost train`')
    .requiredOption('--out <dir>', 'folder for the exported model')
    .addOption(new Option('--checkpoint <which>', 'checkpoint to export').choices(['best', 'last']).default('best'))
    .option('--name <name>', 'model name (default: the output folder name)')
    .option('--quiet', 'no summary line')
    .option('--store-frozen', 'store frozen output matrices as initializers instead of regenerating them from their seed or structure')
    .action(async (run: string, flags: { out: string; checkpoint: 'best' | 'last'; name?: string; quiet?: boolean; storeFrozen?: boolean }) => {
      await initBackend({ quiet: true });
      const result = await exportRun(resolve(run), resolve(flags.out), flags);
      if (!flags.quiet) process.stdout.write(`${result.outDir}\n`);
    });
}
