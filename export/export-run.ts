import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { MODEL_CARD_FILE, modelCardSchema, type ModelCard, type ModelCardInput } from '../core/runtime/model-card.ts';
import { SPECIALS } from '../core/vocab.ts';
import { buildModel } from '../models/index.ts';
import { loadCheckpoint } from '../train/checkpoint.ts';
import { paritySamples } from './sample-data.ts';
import { readVocab } from '../train/prepare-data.ts';
import { RUN_FILES, readRunConfig } from '../train/run-config.ts';
import { restoreTensors } from '../train/trainer.ts';
import { checkParity, PARITY_TOLERANCE, type ParityReport } from './parity.ts';

export interface ExportOptions {
  /** Which checkpoint: the best validation BLEU (default) or the last. */
  checkpoint?: 'best' | 'last';
  /** Model name in the card; defaults to the output folder's name. */
  name?: string;
  /** Sentences from the validation split used for the parity check. @default 8 */
  paritySentences?: number;
  quiet?: boolean;
  /**
   * Store frozen matrices the graph could regenerate (seeded fixed heads, the Hadamard head) as
   * plain initializers instead of regenerating them at session creation. @default false
   */
  storeFrozen?: boolean;
}

export interface ExportResult {
  outDir: string;
  card: ModelCard;
  parity: ParityReport;
}

/**
 * Exports a training run to an encoder graph, a decoder-step graph and a model card. It refuses to
 * finish (and leaves no card behind) unless onnxruntime reproduces the tfjs log-probabilities.
 */
export async function exportRun(runDir: string, outDir: string, opts: ExportOptions = {}): Promise<ExportResult> {
  const config = await readRunConfig(runDir);
  const which = opts.checkpoint ?? 'best';
  let ckptDir = join(runDir, which === 'best' ? RUN_FILES.best : RUN_FILES.last);
  if (!existsSync(ckptDir) && which === 'best') ckptDir = join(runDir, RUN_FILES.last);
  if (!existsSync(ckptDir)) throw new Error(`${runDir} has no checkpoint yet (looked for ${ckptDir})`);
  const checkpoint = await loadCheckpoint(ckptDir);
  const srcVocab = await readVocab(join(runDir, RUN_FILES.srcVocab));
  const tgtVocab = await readVocab(join(runDir, RUN_FILES.tgtVocab));

  const model = buildModel(config.arch, config.archConfig, { srcVocab: srcVocab.size, tgtVocab: tgtVocab.size }, config.head, config.seed);
  restoreTensors(model, null, checkpoint.tensors, ckptDir);
  const storeFrozen = opts.storeFrozen ?? false;
  const { encoder, decoder, graphs } = model.toOnnx({ storeFrozen });
  const encoderBytes = encoder.toBytes();
  const decoderBytes = decoder.toBytes();

  const samples = await paritySamples(config, srcVocab, tgtVocab, opts.paritySentences ?? 8);
  const parity = await checkParity(model, encoderBytes, decoderBytes, samples, SPECIALS.bos.id, SPECIALS.pad.id);
  if (!(parity.maxScaledDiff <= PARITY_TOLERANCE)) {
    model.params.dispose();
    throw new Error(
      `export refused: onnxruntime differs from tfjs by ${parity.maxScaledDiff.toExponential(2)} (tolerance ${PARITY_TOLERANCE}) ` +
        `at ${JSON.stringify(parity.worst)}`,
    );
  }

  await mkdir(outDir, { recursive: true });
  await rm(join(outDir, MODEL_CARD_FILE), { force: true });
  await writeFile(join(outDir, graphs.encoder.file), encoderBytes);
  await writeFile(join(outDir, graphs.decoder.file), decoderBytes);
  const counts = model.params.counts();
  const state = checkpoint.state as { bestBleu?: number; step?: number; epoch?: number };
  const input: ModelCardInput = {
    format: 'frost-model',
    version: 1,
    name: opts.name ?? basename(outDir),
    task: 'translation',
    arch: config.arch,
    preset: config.preset,
    head: model.head.describe(),
    source: { lang: config.data.src, tokens: srcVocab.toJSON() },
    target: { lang: config.data.tgt, tokens: tgtVocab.toJSON() },
    specials: { pad: SPECIALS.pad.id, unk: SPECIALS.unk.id, bos: SPECIALS.bos.id, eos: SPECIALS.eos.id },
    tokenizer: config.tokenizer,
    graphs,
    params: { learnable: counts.learnable, frozen: counts.frozen, generated: model.head.generatedParams?.(storeFrozen) ?? 0, byComponent: model.params.countsByComponent() },
    files: {
      [graphs.encoder.file]: { bytes: encoderBytes.length, gzipBytes: gzipSync(encoderBytes).length },
      [graphs.decoder.file]: { bytes: decoderBytes.length, gzipBytes: gzipSync(decoderBytes).length },
    },
    precision: 'fp32',
    config: {
      archConfig: config.archConfig,
      seed: config.seed,
      data: { kind: config.data.kind, src: config.data.src, tgt: config.data.tgt },
      checkpoint: { which: basename(ckptDir), step: state.step, epoch: state.epoch },
      parity: { maxAbsDiff: parity.maxAbsDiff, maxScaledDiff: parity.maxScaledDiff, sentences: parity.sentences },
      initializerBytes: { encoder: encoder.initializerBytesByScope(), decoder: decoder.initializerBytesByScope() },
    },
    metrics: Number.isFinite(state.bestBleu) ? { valBleu: state.bestBleu as number } : {},
    created: new Date().toISOString(),
  };
  const card = modelCardSchema.parse(input);
  await writeFile(join(outDir, MODEL_CARD_FILE), `${JSON.stringify(card, null, 1)}\n`);
  model.params.dispose();
  if (!opts.quiet) {
    process.stderr.write(
      `exported ${runDir} -> ${outDir}: ${card.params.learnable} learnable parameters, ` +
        `${encoderBytes.length + decoderBytes.length} bytes of ONNX, parity max |Δ| ${parity.maxAbsDiff.toExponential(2)}\n`,
    );
  }
  return { outDir, card, parity };
}
