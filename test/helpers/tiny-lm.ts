/**
 * A real, tiny exported language model for loader and server tests, untrained (seeded random
 * weights), written with frost's GraphBuilder to the LM card's contract (core/runtime/lm-card.ts):
 * h = tanh(E[token]·A + state·R + b), `log_probs` = LogSoftmax(h·O + o), `next_state` = h.
 * Building it takes milliseconds, where exporting a trained one (test/helpers/lm-run.ts) takes a run.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { streamKey, uniformMatrix } from '../../core/random.ts';
import type { LmCardInput } from '../../core/runtime/lm-card.ts';
import { MODEL_CARD_FILE } from '../../core/runtime/model-card.ts';
import { TINY_SOURCE_WORDS } from './tiny-model.ts';

export const TINY_LM_STEP_FILE = 'step.onnx';

/** The step graph's bytes and the card (as JSON input, `files` filled in). */
export interface TinyLm {
  card: LmCardInput;
  step: Uint8Array;
}

/** Builds the tiny language model in memory. */
export function buildTinyLm(opts: { name?: string; seed?: number; hidden?: number } = {}): TinyLm {
  const seed = opts.seed ?? 5;
  const H = opts.hidden ?? 8;
  const tokens = ['<pad>', '<unk>', '<s>', '</s>', ...TINY_SOURCE_WORDS];
  const V = tokens.length;
  const weights = (stream: string, rows: number, cols: number) => ({
    dtype: 'float32' as const,
    dims: [rows, cols],
    data: uniformMatrix(streamKey(seed, stream), rows, cols, -1, 1),
  });
  const g = new GraphBuilder('tiny_lm_step');
  const token = g.input('token', 'int64', ['rows']);
  const state = g.input('state', 'float32', ['rows', H]);
  const e = g.op('Gather', [g.initializer('lm/embedding', weights('emb', V, H)), token], { axis: 0 });
  const h = g.op('Tanh', [
    g.op('Add', [
      g.op('MatMul', [e, g.initializer('lm/a', weights('a', H, H))]),
      g.op('MatMul', [state, g.initializer('lm/r', weights('r', H, H))]),
    ]),
  ]);
  const logits = g.op('Add', [
    g.op('MatMul', [h, g.initializer('head/w', weights('out_w', H, V))]),
    g.initializer('head/b', {
      dtype: 'float32',
      dims: [V],
      data: uniformMatrix(streamKey(seed, 'out_b'), 1, V, -1, 1),
    }),
  ]);
  g.output(g.op('LogSoftmax', [logits], { axis: 1 }), 'log_probs', 'float32', ['rows', V]);
  g.output(h, 'next_state', 'float32', ['rows', H]);
  const step = g.toBytes();
  const params = V * H + 2 * H * H + H * V + V;
  const card: LmCardInput = {
    format: 'frost-model',
    version: 1,
    name: opts.name ?? 'tiny-lm',
    task: 'lm',
    arch: 'tiny-rnn-lm',
    preset: 'test',
    head: { name: 'learned' },
    target: { lang: 'en', tokens },
    specials: { pad: 0, unk: 1, bos: 2, eos: 3 },
    tokenizer: 'multi30k',
    graphs: {
      step: { file: TINY_LM_STEP_FILE, token: 'token', state: ['state'], stateSize: H, logProbs: 'log_probs' },
    },
    params: { learnable: params, frozen: 0, generated: 0, byComponent: { lm: params } },
    files: { [TINY_LM_STEP_FILE]: { bytes: step.length } },
    config: { hidden: H, seed },
    created: '2025-01-01T00:00:00.000Z',
  };
  return { card, step };
}

/** Writes the tiny language model as an export directory (`model-card.json`, `step.onnx`); returns `dir`. */
export async function writeTinyLmDir(dir: string, opts: Parameters<typeof buildTinyLm>[0] = {}): Promise<string> {
  const model = buildTinyLm(opts);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, MODEL_CARD_FILE), `${JSON.stringify(model.card, null, 2)}\n`);
  await writeFile(join(dir, TINY_LM_STEP_FILE), model.step);
  return dir;
}
