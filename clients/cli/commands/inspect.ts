import type { Command } from 'commander';
import { resolve } from 'node:path';
import { formatInspect, inspectModel } from '../../../export/inspect.ts';

/**
 * `frost inspect MODEL_DIR [--json]`: what an exported model is made of: parameters, file sizes,
 * bytes per component, session-creation time, the fp16/int8 check, and the graphs' interfaces.
 */
export function registerInspect(program: Command): void {
  program
    .command('inspect')
    .description(
      'show what an exported model is made of (sizes per component, parameters, load time, graph interfaces)',
    )
    .argument('<model-dir>', 'exported model directory (with model-card.json)')
    .option('--json', 'print the report as JSON')
    .action(async (modelDir: string, flags: { json?: boolean }) => {
      const report = await inspectModel(resolve(modelDir));
      process.stdout.write(flags.json ? `${JSON.stringify(report, null, 2)}\n` : formatInspect(report));
    });
}
