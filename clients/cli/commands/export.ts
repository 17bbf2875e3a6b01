import { type Command, Option } from 'commander';
import { resolve } from 'node:path';
import { exportRun } from '../../../export/export-run.ts';
import { hfRunRefusal, writeHfLayout } from '../../../export/hf/hf-layout.ts';
import { RunFolder } from '../../../train/run-folder.ts';
import { MAX_PARITY_TOLERANCE, PARITY_TOLERANCE, parityTolerance } from '../../../export/parity.ts';
import { PRECISION_CHECK_SENTENCES } from '../../../export/precision-check.ts';
import { type Precision, PRECISIONS } from '../../../export/precision.ts';
import { initBackend } from '../../../train/backend/select.ts';
import { intOption } from './serve.ts';

interface ExportFlags {
  out: string;
  checkpoint: 'best' | 'last';
  averageLast?: number;
  name?: string;
  quiet?: boolean;
  storeFrozen?: boolean;
  precision: Precision;
  precisionSentences: number;
  triton?: string;
  tritonMaxBatch: number;
  parityTolerance?: number;
  hf?: string;
}

export function registerExport(program: Command): void {
  program
    .command('export')
    .description('export a training run to ONNX (encoder + decoder step) with a model card')
    .argument('<run>', 'run folder written by `frost train`')
    .requiredOption('--out <dir>', 'folder for the exported model')
    .addOption(new Option('--checkpoint <which>', 'checkpoint to export').choices(['best', 'last']).default('best'))
    .option(
      '--average-last <n>',
      'export the mean of the last n epoch checkpoints (kept by `frost train --keep-last`) instead of --checkpoint',
      intOption('--average-last', 1),
    )
    .option('--name <name>', 'model name (default: the output folder name)')
    .option('--quiet', 'no summary line')
    .option(
      '--store-frozen',
      'store frozen output matrices as initializers instead of regenerating them from their seed or structure',
    )
    .addOption(
      new Option(
        '--precision <p>',
        'precision of the large weights (fp16/int8: smaller files that compute in float32; ' +
          'int8-compute: as small, with integer MatMul kernels, faster steps; all checked by validation BLEU against fp32)',
      )
        .choices(PRECISIONS)
        .default('fp32'),
    )
    .option(
      '--precision-sentences <n>',
      'validation sentences for the fp16/int8 BLEU check',
      intOption('--precision-sentences', 1),
      PRECISION_CHECK_SENTENCES,
    )
    .option(
      '--parity-tolerance <t>',
      `largest |onnxruntime − tfjs| / max(1, |log-prob|) accepted (default ${PARITY_TOLERANCE}, at most ${MAX_PARITY_TOLERANCE}); recorded in the card`,
      (v: string) => parityTolerance(Number(v)),
    )
    .option('--triton <dir>', 'also write a Triton Inference Server model repository to this folder')
    .option(
      '--hf <dir>',
      'also write the Hugging Face layout (transformers.js, Optimum) to this folder: Transformer, joint subword vocabulary',
    )
    .option('--triton-max-batch <n>', 'max_batch_size of the Triton configs', intOption('--triton-max-batch', 1), 64)
    .action(async (run: string, flags: ExportFlags) => {
      await initBackend({ quiet: true });
      // Refused before anything is exported: the layout's limits are the task's and the architecture's.
      if (flags.hf !== undefined) {
        const refusal = hfRunRefusal((await RunFolder.open(resolve(run))).config);
        if (refusal !== undefined) throw new Error(refusal);
      }
      const result = await exportRun(resolve(run), resolve(flags.out), {
        ...flags,
        triton: flags.triton === undefined ? undefined : resolve(flags.triton),
        tritonOptions: { maxBatchSize: flags.tritonMaxBatch },
        // The layout splices the step graph under Optimum's past_key_values, which grow by Concat.
        ...(flags.hf !== undefined && { decoderCache: 'concat' as const }),
      });
      if (flags.hf !== undefined) await writeHfLayout(result.outDir, resolve(flags.hf));
      if (!flags.quiet) process.stdout.write(`${result.outDir}\n`);
    });
}
