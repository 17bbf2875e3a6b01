/**
 * The models bench/decode-speed.ts times when no trained model is named: rnn-attn (or another
 * architecture, `arch`) with a given head, built from its seeded initialisation on vocabulary sizes
 * of a real corpus, exported the way `frost export` exports a run (the arch's own ONNX emission, then
 * the precision pass), and written as a model folder. Decoding cost does not depend on the weights'
 * values, and the benchmark forces every sentence to the same output length, so an untrained model
 * does the same work per sentence as a trained one; anyone can rebuild these in seconds. A caption
 * architecture (show-tell, show-attend-tell) is written as a caption model reading pixels.
 *
 * A peer that decodes with frost's own weights (bench/peer/ctranslate2_decode.py) reads them from `params/`, the
 * model's parameters as a frost checkpoint (train/checkpoint.ts), written with `params: true`.
 */
import { tensor } from '@tensorflow/tfjs-core';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { MODEL_CARD_FILE, modelCardSchema, type ModelCard, type ModelCardInput } from '../core/runtime/model-card.ts';
import { SeededRandom } from '../core/random.ts';
import { SPECIALS } from '../core/vocab.ts';
import { decodeModel, encodeModel, type ModelProtoObject } from '../core/onnx/proto.ts';
import { convertPrecision, type Precision } from '../export/precision.ts';
import { stepGraphForm } from '../export/seq2seq-export.ts';
import { TOP_LOG_PROBS, TOP_TOKENS } from '../models/archs/graph-spec.ts';
import { buildModel, getArch, resolveArchConfig } from '../models/index.ts';
import type { ParamStore } from '../models/params.ts';
import { saveCheckpoint, variableTensors } from '../train/checkpoint.ts';

/** Multi30k en→de vocabulary sizes of frost's default training run (words seen at least twice, specials included). */
export const DEFAULT_VOCAB = { src: 5900, tgt: 7800 } as const;

/** One vocabulary for both sides (`joint`): 8,000 pieces, the size of a joint subword vocabulary of frost's runs. */
export const JOINT_VOCAB = 8000;

/** The folder under a bench model's folder that holds its parameters when written with `params: true`. */
export const PARAMS_DIR = 'params';

export interface BenchModelOptions {
  /** An architecture of models/archs' registry; an image one is written as a caption model. @default 'rnn-attn' */
  arch?: string;
  head: string;
  preset?: string;
  precision?: Precision;
  srcVocab?: number;
  tgtVocab?: number;
  seed?: number;
  /**
   * false: the decoder graph and card without the top-k outputs, as frost exported them before
   * they existed (search then reads whole rows), for bench:decode's `--compare-whole-rows`.
   */
  topK?: boolean;
  /** Caption architectures: the side of the square image the encoder reads. @default 32 */
  imageSize?: number;
  /**
   * One vocabulary of `srcVocab` (default {@link JOINT_VOCAB}) tokens for both sides, the source and target
   * embedding shared (the Transformer's recipe). @default false
   */
  joint?: boolean;
  /**
   * Adds seeded uniform noise in ±noise to every parameter after initialisation, so biases and layer norms are
   * not their constant starting values and a peer that maps frost's weights (and checks that it decodes the
   * same tokens) maps each of them. @default 0
   */
  noise?: number;
  /** Also write the parameters (float32, by frost's names) to `params/` as a frost checkpoint. @default false */
  params?: boolean;
  /**
   * The Transformer step graph's key/value caches (models/archs/types.ts's OnnxGraphOptions): `append` as `frost
   * export` writes them, or the Concat form (the name then ends in `-concat`). @default 'append'
   */
  decoderCache?: 'concat' | 'append';
}

/** A written bench model: its folder, card and the arch config the PyTorch peer rebuilds. */
export interface BenchModel {
  dir: string;
  card: ModelCard;
  archConfig: Record<string, unknown>;
  /** Source words of the card's vocabulary (no specials), to make request texts from; none for a caption model. */
  sourceWords: string[];
  /** The folder of the parameters as a frost checkpoint (train/checkpoint.ts), when written: what a peer maps. */
  params?: string;
}

/** The image preprocessing written into a bench caption model's card (any values do for an untrained model). */
const BENCH_IMAGE = { mean: [0.5, 0.5, 0.5], std: [0.25, 0.25, 0.25] } as const;

/** frost's special tokens, in id order. */
export const SPECIAL_TOKENS = [SPECIALS.pad.token, SPECIALS.unk.token, SPECIALS.bos.token, SPECIALS.eos.token];

/** Builds, exports and writes one bench model under `root`. */
export async function writeBenchModel(root: string, opts: BenchModelOptions): Promise<BenchModel> {
  const preset = opts.preset ?? 'small';
  const precision = opts.precision ?? 'fp32';
  const joint = opts.joint ?? false;
  const srcVocab = opts.srcVocab ?? (joint ? JOINT_VOCAB : DEFAULT_VOCAB.src);
  const tgtVocab = joint ? srcVocab : (opts.tgtVocab ?? DEFAULT_VOCAB.tgt);
  const seed = opts.seed ?? 1;
  const arch = opts.arch ?? 'rnn-attn';
  const caption = getArch(arch).inputKind === 'image';
  const imageSize = opts.imageSize ?? 32;
  const archConfig = resolveArchConfig(arch, preset);
  const sizes = caption
    ? { tgtVocab, image: { kind: 'pixels', size: imageSize } as const }
    : { srcVocab, tgtVocab, ...(joint ? { jointEmbedding: true } : {}) };
  const model = buildModel(arch, archConfig, sizes, { name: opts.head }, seed);
  if (opts.noise) addNoise(model.params, opts.noise, seed);
  const { encoder, decoder, graphs } = model.toOnnx(stepGraphForm(opts.decoderCache ?? 'append'));
  const stripped = opts.topK === false && graphs.decoder.top !== undefined;
  if (stripped) delete graphs.decoder.top;
  const enc = convertPrecision(encoder.toBytes(), precision).bytes;
  const dec = convertPrecision(stripped ? withoutTopK(decoder.toBytes()) : decoder.toBytes(), precision).bytes;
  const words = (prefix: string, n: number) =>
    Array.from({ length: n - SPECIAL_TOKENS.length }, (_, i) => `${prefix}${i}`);
  const targetWords = words(joint ? 'w' : 't', tgtVocab);
  const sourceWords = caption ? [] : joint ? targetWords : words('s', srcVocab);
  const counts = model.params.counts();
  const input: ModelCardInput = {
    format: 'frost-model',
    version: 1,
    // rnn-attn's names as before this option existed, so folders written by earlier runs keep theirs.
    name: `bench-${arch === 'rnn-attn' ? '' : `${arch}-`}${opts.head}-${precision}${stripped ? '-whole-rows' : ''}${opts.decoderCache === 'concat' ? '-concat' : ''}`,
    task: caption ? 'caption' : 'translation',
    arch,
    preset,
    head: model.head.describe(),
    ...(caption
      ? { image: { size: imageSize, mean: [...BENCH_IMAGE.mean], std: [...BENCH_IMAGE.std] } }
      : { source: { lang: 'en', tokens: [...SPECIAL_TOKENS, ...sourceWords] } }),
    target: { lang: caption ? 'en' : 'de', tokens: [...SPECIAL_TOKENS, ...targetWords] },
    specials: { pad: SPECIALS.pad.id, unk: SPECIALS.unk.id, bos: SPECIALS.bos.id, eos: SPECIALS.eos.id },
    tokenizer: caption ? 'caption' : 'whitespace',
    graphs,
    params: {
      learnable: counts.learnable,
      frozen: counts.frozen,
      generated: model.head.generatedParams?.(false) ?? 0,
      byComponent: model.params.countsByComponent(),
    },
    files: {
      [graphs.encoder.file]: { bytes: enc.length, gzipBytes: gzipSync(enc).length },
      [graphs.decoder.file]: { bytes: dec.length, gzipBytes: gzipSync(dec).length },
    },
    precision,
    config: { archConfig, seed, untrained: true, ...(joint ? { jointEmbedding: true } : {}) },
    metrics: {},
    created: new Date().toISOString(),
  };
  const params = opts.params ? variableTensors(model.params.learnable) : undefined;
  model.params.dispose();
  const card = modelCardSchema.parse(input);
  const dir = join(root, card.name);
  await mkdir(dir, { recursive: true });
  if (params) await saveCheckpoint(join(dir, PARAMS_DIR), params, { arch, preset, head: opts.head, seed });
  await writeFile(join(dir, graphs.encoder.file), enc);
  await writeFile(join(dir, graphs.decoder.file), dec);
  await writeFile(join(dir, MODEL_CARD_FILE), `${JSON.stringify(card, null, 1)}\n`);
  return { dir, card, archConfig, sourceWords, ...(params ? { params: join(dir, PARAMS_DIR) } : {}) };
}

/** Moves every learnable parameter by seeded uniform noise in ±`scale` (see {@link BenchModelOptions.noise}). */
function addNoise(params: ParamStore, scale: number, seed: number): void {
  const rng = new SeededRandom(seed, 'bench-model-noise');
  for (const v of params.learnable.values()) {
    const data = Float32Array.from(v.dataSync() as Float32Array, (x) => x + (2 * rng.next() - 1) * scale);
    v.assign(tensor(data, v.shape, 'float32'));
  }
}

interface NodeLike {
  input?: string[];
  output?: string[];
}

/** A decoder graph without its top-k outputs and the nodes only they need (a graph exported before them). */
export function withoutTopK(bytes: Uint8Array): Uint8Array {
  const model = decodeModel(bytes) as unknown as ModelProtoObject;
  const graph = model.graph as unknown as {
    node?: NodeLike[];
    output?: { name: string }[];
    initializer?: { name: string }[];
  };
  graph.output = (graph.output ?? []).filter((o) => o.name !== TOP_LOG_PROBS && o.name !== TOP_TOKENS);
  // Drop nodes whose outputs nothing reads, until none is left.
  for (let changed = true; changed;) {
    const read = new Set([...graph.output.map((o) => o.name), ...(graph.node ?? []).flatMap((n) => n.input ?? [])]);
    const kept = (graph.node ?? []).filter((n) => (n.output ?? []).some((o) => read.has(o)));
    changed = kept.length !== (graph.node ?? []).length;
    graph.node = kept;
  }
  const read = new Set((graph.node ?? []).flatMap((n) => n.input ?? []));
  graph.initializer = (graph.initializer ?? []).filter((t) => read.has(t.name));
  return encodeModel(model);
}
