import { basename } from 'node:path';
import { MODEL_CARD_FILE, type ModelCard } from '../core/runtime/model-card.ts';
import { checkpointSha256, readCheckpointInfo, RunFolder } from '../train/run-folder.ts';
import { checkpointName } from './card-fields.ts';
import { writeModelDir } from './model-dir.ts';
import type { ParityReport } from './parity.ts';
import type { PrecisionCheck } from './precision-check.ts';
import type { Precision } from './precision.ts';
import { taskExport } from './task-exports.ts';
import type { ExportSource } from './task-parts.ts';
import type { TritonOptions } from './triton.ts';

export interface ExportOptions {
  /** Which checkpoint: the best validation BLEU (default) or the last. */
  checkpoint?: 'best' | 'last';
  /**
   * Export the mean of the last N epoch checkpoints' parameters instead (fairseq's
   * average_checkpoints.py --num-epoch-checkpoints N); `checkpoint` is then not used. The run must
   * keep N or more (`frost train --keep-last`).
   */
  averageLast?: number;
  /** Model name in the card; defaults to the output folder's name. */
  name?: string;
  /** Validation sentences (images, for captioning) used for the parity check. @default 8 */
  paritySentences?: number;
  /** Language models: streams and steps of the validation split the parity check runs. @default 4 × 24 */
  parityStreams?: number;
  paritySteps?: number;
  /** The largest |Δ| / max(1, |value|) the export accepts (export/parity.ts). @default 1e-4 */
  parityTolerance?: number;
  quiet?: boolean;
  /**
   * Store frozen matrices the graph could regenerate (seeded fixed heads, the Hadamard head) as
   * plain initializers instead of regenerating them at session creation. @default false
   */
  storeFrozen?: boolean;
  /**
   * Storage precision of the large weights (export/precision.ts). The float32 graphs are parity-
   * checked against tfjs first; fp16/int8 ones are then compared with them by greedy BLEU on the
   * validation split (export/precision-check.ts) instead of the 1e-4 bar. @default 'fp32'
   */
  precision?: Precision;
  /** Validation sentences for the fp16/int8 BLEU comparison. @default 300 */
  precisionSentences?: number;
  /**
   * How the Transformer's step graph carries its key/value caches (models/archs/types.ts's OnnxGraphOptions):
   * `append` by default, `concat` for consumers that feed whole caches back (the Hugging Face layout); a Triton
   * export is always `concat`. `append` also reads the encoder memory with one row per source (the card's
   * `graphs.decoder.groupedMemory`), `concat` with one per step row.
   */
  decoderCache?: 'concat' | 'append';
  /** Also write a Triton Inference Server model repository here (export/triton.ts). */
  triton?: string;
  tritonOptions?: TritonOptions;
}

/** An export's folder, card (a seq2seq model's by default; `LmCard` for a language model) and parity. */
export interface ExportResult<Card = ModelCard> {
  outDir: string;
  card: Card;
  parity: ParityReport;
  /** Only for fp16/int8 exports. */
  precisionCheck?: PrecisionCheck;
}

/** The checkpoint to export: one saved by the trainer, or the average of the last N epoch checkpoints. */
async function loadSource(run: RunFolder, opts: ExportOptions): Promise<ExportSource> {
  if (opts.averageLast === undefined) {
    const dir = run.findCheckpoint(opts.checkpoint ?? 'best');
    const name = checkpointName(dir);
    if (!opts.quiet && name !== basename(dir))
      process.stderr.write(`exporting ${name} from ${dir}, where a save interrupted between its two renames left it\n`);
    const checkpoint = await run.loadCheckpoint(dir);
    const best = await readCheckpointInfo(run.dir, 'best').catch(() => null);
    const step = Number(checkpoint.state.step ?? 0);
    return { checkpoint, dir, validated: name === 'best' || (best !== null && best.step === step) };
  }
  const { checkpoint, averaged } = await run.averageLast(opts.averageLast);
  const sums = await Promise.all(averaged.map((c) => checkpointSha256(c.dir)));
  return {
    checkpoint,
    validated: false,
    // Named in errors about the averaged tensors: the newest of them.
    dir: averaged[averaged.length - 1]!.dir,
    averaged: averaged.map((c, i) => ({ ...c, sha256: sums[i]! })),
  };
}

/**
 * Exports a training run of any task to its graphs (an encoder and a decoder step; a language model's
 * one step graph) and a model card. It refuses to finish (and writes nothing) unless
 * onnxruntime reproduces the tfjs log-probabilities. What differs by task (the graphs, their parity
 * inputs, the card's fields) comes from the task's export, which its own file registers (task-exports.ts
 * imports them all); the folder is replaced whole, the previous model kept until the new one is on disk
 * (model-dir.ts).
 */
export async function exportRun<Card = ModelCard>(
  runDir: string,
  outDir: string,
  opts: ExportOptions = {},
): Promise<ExportResult<Card>> {
  const run = await RunFolder.open(runDir);
  const task = taskExport(run.config.task);
  task.refuse?.(opts);
  const source = await loadSource(run, opts);
  const built = await task.build(run, source, opts, opts.name ?? basename(outDir));
  const recovered = await writeModelDir(outDir, {
    ...built.files,
    [MODEL_CARD_FILE]: `${JSON.stringify(built.card, null, 1)}\n`,
  });
  if (!opts.quiet) for (const line of recovered) process.stderr.write(`${line}\n`);
  await built.finish?.();
  const card = built.card as Card & { params: { learnable: number } };
  if (!opts.quiet)
    process.stderr.write(
      `exported ${runDir} -> ${outDir}: ${card.params.learnable} learnable parameters, ${built.describe}, parity max |Δ| ${built.parity.maxAbsDiff.toExponential(2)}${built.note ?? ''}\n`,
    );
  return {
    outDir,
    card,
    parity: built.parity,
    ...(built.precisionCheck ? { precisionCheck: built.precisionCheck } : {}),
  };
}
