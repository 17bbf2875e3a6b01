/**
 * A real, tiny exported model for runtime and server tests: two ONNX graphs written with frost's own
 * GraphBuilder plus a model card, following the export contract exactly (core/runtime/model-card.ts).
 * Its weights are seeded random, so its translations are nonsense but deterministic; what the tests
 * check is the plumbing (tokenise → encode → search → detokenise, batching, beams, HTTP), which is
 * exercised by ONNX Runtime running these graphs, not by a stub.
 *
 * Encoder: embedding Gather, masked mean over the valid positions → `state` [B,H]; memory
 * `enc_out` = tanh(embedding) · mask [B,S,H] and `src_mask` [B,S].
 * Decoder step: h = tanh(E[token]·A + state·R + ctx·C + b) with ctx the masked mean of `enc_out`,
 * `log_probs` = LogSoftmax(h·O + o), `next_state` = h.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { streamKey, uniformMatrix } from '../../core/random.ts';
import { MODEL_CARD_FILE, type ModelCardInput } from '../../core/runtime/model-card.ts';
import { trainBpe } from '../../core/subword/bpe-trainer.ts';
import type { SubwordModel } from '../../core/subword/subword-model.ts';
import type { SubwordKind } from '../../core/subword/subword-spec.ts';
import { trainUnigram } from '../../core/subword/unigram-trainer.ts';

const SPECIALS = ['<pad>', '<unk>', '<s>', '</s>'];
/** Picked so that, with the default seed, some outputs are empty, some short and some run long. */
const EOS_BIAS = -1.5;

/** 16 English words; the tokenizer ('multi30k') lower-cases and splits off the '.'. */
export const TINY_SOURCE_WORDS = [
  'a',
  'man',
  'dog',
  'cat',
  'runs',
  'sits',
  'on',
  'the',
  'red',
  'blue',
  'big',
  'small',
  'house',
  'ball',
  'and',
  '.',
];
export const TINY_TARGET_WORDS = [
  'ein',
  'mann',
  'hund',
  'katze',
  'läuft',
  'sitzt',
  'auf',
  'der',
  'rote',
  'blaue',
  'große',
  'kleine',
  'haus',
  'ball',
  'und',
  '.',
];

export interface TinyModelOptions {
  /** Card name (the server's model name). @default 'tiny-en-de' */
  name?: string;
  /** Weight seed. @default 7 */
  seed?: number;
  /** Hidden size. @default 8 */
  hidden?: number;
  /**
   * A joint subword vocabulary (core/subword) learned from the tiny words, cased, instead of the word lists: the
   * card names `subword.model`, which {@link writeTinyModelDir} writes beside the graphs. `true` is `'bpe'`.
   * @default false
   */
  subword?: boolean | SubwordKind;
}

/** A joint 300-piece BPE or unigram model over the tiny words (both languages, cased and lower-cased). */
function tinySubwordModel(kind: SubwordKind): SubwordModel {
  const words = [...TINY_SOURCE_WORDS, ...TINY_TARGET_WORDS];
  const sentences = words.flatMap((w, i) => [
    `${w} ${words[(i + 3) % words.length]}`,
    `${w[0]!.toUpperCase()}${w.slice(1)} .`,
  ]);
  return (kind === 'unigram' ? trainUnigram : trainBpe)(sentences, { vocabSize: 300 }).model;
}

/** The two graphs' bytes and the card (as JSON input, `files` filled in). */
export interface TinyModel {
  card: ModelCardInput;
  encoder: Uint8Array;
  decoder: Uint8Array;
  /** Other files the card names (the subword model), by name. */
  files: Record<string, Uint8Array>;
}

/** Builds the tiny model in memory. */
export function buildTinyModel(opts: TinyModelOptions = {}): TinyModel {
  const name = opts.name ?? 'tiny-en-de';
  const seed = opts.seed ?? 7;
  const H = opts.hidden ?? 8;
  const subword = opts.subword ? tinySubwordModel(opts.subword === true ? 'bpe' : opts.subword) : undefined;
  const srcTokens = subword ? subword.tokens : [...SPECIALS, ...TINY_SOURCE_WORDS];
  const tgtTokens = subword ? subword.tokens : [...SPECIALS, ...TINY_TARGET_WORDS];
  const files: Record<string, Uint8Array> = subword ? { 'subword.model': subword.toBytes() } : {};
  const Vs = srcTokens.length;
  const Vt = tgtTokens.length;
  const weights = (stream: string, rows: number, cols: number, scale: number) => ({
    dtype: 'float32' as const,
    dims: [rows, cols],
    data: uniformMatrix(streamKey(seed, stream), rows, cols, -scale, scale),
  });

  // ---- encoder ----
  const enc = new GraphBuilder('tiny_encoder');
  const srcIds = enc.input('src_ids', 'int64', ['batch', 'src_len']);
  const srcLengths = enc.input('src_lengths', 'int64', ['batch']);
  const emb = enc.op('Gather', [enc.initializer('encoder/embedding', weights('src_emb', Vs, H, 1)), srcIds], {
    axis: 0,
  });
  // mask[b, s] = s < src_lengths[b]
  const S = enc.op('Gather', [enc.op('Shape', [srcIds]), enc.constInt64(1, [])], { axis: 0 });
  const positions = enc.op('Range', [enc.constInt64(0, []), S, enc.constInt64(1, [])]);
  const validBool = enc.op('Less', [enc.unsqueeze(positions, [0]), enc.unsqueeze(srcLengths, [1])]);
  const mask = enc.cast(validBool, 'float32');
  const encOut = enc.op('Mul', [enc.op('Tanh', [emb]), enc.unsqueeze(mask, [2])]);
  const lengths = enc.unsqueeze(enc.cast(srcLengths, 'float32'), [1]);
  const mean = enc.op('Div', [enc.reduce('ReduceSum', encOut, [1], false), lengths]);
  const encState = enc.op('Tanh', [
    enc.op('Add', [
      enc.op('MatMul', [mean, enc.initializer('encoder/w', weights('enc_w', H, H, 1))]),
      enc.initializer('encoder/b', {
        dtype: 'float32',
        dims: [H],
        data: uniformMatrix(streamKey(seed, 'enc_b'), 1, H, -0.1, 0.1),
      }),
    ]),
  ]);
  enc.output(encState, 'state', 'float32', ['batch', H]);
  enc.output(encOut, 'enc_out', 'float32', ['batch', 'src_len', H]);
  enc.output(mask, 'src_mask', 'float32', ['batch', 'src_len']);

  // ---- decoder step ----
  const dec = new GraphBuilder('tiny_decoder');
  const token = dec.input('token', 'int64', ['rows']);
  const state = dec.input('state', 'float32', ['rows', H]);
  const memOut = dec.input('enc_out', 'float32', ['rows', 'src_len', H]);
  const memMask = dec.input('src_mask', 'float32', ['rows', 'src_len']);
  const e = dec.op('Gather', [dec.initializer('decoder/embedding', weights('tgt_emb', Vt, H, 1)), token], { axis: 0 });
  const ctx = dec.op('Div', [
    dec.reduce('ReduceSum', dec.op('Mul', [memOut, dec.unsqueeze(memMask, [2])]), [1], false),
    dec.reduce('ReduceSum', memMask, [1], true),
  ]);
  const pre = dec.op('Add', [
    dec.op('Add', [
      dec.op('MatMul', [e, dec.initializer('decoder/a', weights('dec_a', H, H, 1))]),
      dec.op('MatMul', [state, dec.initializer('decoder/r', weights('dec_r', H, H, 1))]),
    ]),
    dec.op('MatMul', [ctx, dec.initializer('decoder/c', weights('dec_c', H, H, 1))]),
  ]);
  const h = dec.op('Tanh', [pre]);
  // <unk> is pushed down so outputs are words; </s> is biased (EOS_BIAS) so that hypotheses end at
  // different lengths instead of all stopping at once or all running to the length cap.
  const outBias = uniformMatrix(streamKey(seed, 'out_b'), 1, Vt, -0.5, 0.5);
  outBias[1] -= 3;
  outBias[3] += EOS_BIAS;
  const logits = dec.op('Add', [
    dec.op('MatMul', [h, dec.initializer('head/w', weights('out_w', H, Vt, 2))]),
    dec.initializer('head/b', { dtype: 'float32', dims: [Vt], data: outBias }),
  ]);
  dec.output(dec.op('LogSoftmax', [logits], { axis: 1 }), 'log_probs', 'float32', ['rows', Vt]);
  dec.output(h, 'next_state', 'float32', ['rows', H]);

  const encoder = enc.toBytes();
  const decoder = dec.toBytes();
  const encParams = Vs * H + H * H + H;
  const decParams = Vt * H + 3 * H * H + H * Vt + Vt;
  const card: ModelCardInput = {
    format: 'frost-model',
    version: 1,
    name,
    task: 'translation',
    arch: 'tiny-mean-rnn',
    preset: 'test',
    head: { name: 'learned' },
    source: { lang: 'en', tokens: srcTokens },
    target: { lang: 'de', tokens: tgtTokens },
    specials: { pad: 0, unk: 1, bos: 2, eos: 3 },
    tokenizer: subword ? 'sentencepiece' : 'multi30k',
    ...(subword
      ? {
          subword: {
            kind: subword.kind,
            joint: true,
            vocabSize: subword.size,
            files: { en: 'subword.model', de: 'subword.model' },
          },
        }
      : {}),
    graphs: {
      encoder: { file: 'encoder.onnx', inputs: ['src_ids', 'src_lengths'], outputs: ['state', 'enc_out', 'src_mask'] },
      decoder: {
        file: 'decoder.onnx',
        token: 'token',
        state: ['state'],
        memory: ['enc_out', 'src_mask'],
        logProbs: 'log_probs',
      },
    },
    params: {
      learnable: encParams + decParams,
      frozen: 0,
      generated: 0,
      byComponent: { encoder: encParams, decoder: decParams - (H * Vt + Vt), head: H * Vt + Vt },
    },
    files: {
      'encoder.onnx': { bytes: encoder.length },
      'decoder.onnx': { bytes: decoder.length },
      ...Object.fromEntries(Object.entries(files).map(([file, bytes]) => [file, { bytes: bytes.length }])),
    },
    precision: 'fp32',
    config: { hidden: H, seed },
    metrics: {},
    created: '2025-01-01T00:00:00.000Z',
  };
  return { card, encoder, decoder, files };
}

/** Writes the tiny model as an export directory (`model-card.json`, `encoder.onnx`, `decoder.onnx`); returns `dir`. */
export async function writeTinyModelDir(dir: string, opts: TinyModelOptions = {}): Promise<string> {
  const model = buildTinyModel(opts);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, MODEL_CARD_FILE), `${JSON.stringify(model.card, null, 2)}\n`);
  await writeFile(join(dir, 'encoder.onnx'), model.encoder);
  await writeFile(join(dir, 'decoder.onnx'), model.decoder);
  for (const [file, bytes] of Object.entries(model.files)) await writeFile(join(dir, file), bytes);
  return dir;
}
