/**
 * Decoding from the decoder's top-k outputs against decoding from whole rows, timed alternately on
 * the same chunks of sentences (same hypotheses; docs/decoding-speed.md): the same model exported
 * without the top-k outputs (bench/decode-model.ts, `topK: false`), decoding as frost did before
 * them, against the export as it is now. bench:decode (rnn-attn) and bench:step (any translation
 * architecture) both run it with `--compare-whole-rows`.
 */
import { generate } from '../core/decode/generate.ts';
import { SeededRandom } from '../core/random.ts';
import { loadModelDir } from '../core/runtime/load-node.ts';
import type { Seq2SeqRuntime } from '../core/runtime/seq2seq.ts';
import type { BenchModel } from './decode-model.ts';

/** A search at a batch size: `sentences` sources decoded in chunks of `batch`. */
export interface DecodeMode {
  name: string;
  beam: number;
  batch: number;
  sentences: number;
}

/** The modes `--modes` may name (comma-separated, as in the tables). */
export const DECODE_MODES: readonly DecodeMode[] = [
  { name: 'greedy b1', beam: 1, batch: 1, sentences: 16 },
  { name: 'greedy b64', beam: 1, batch: 64, sentences: 64 },
  { name: 'beam5 b1', beam: 5, batch: 1, sentences: 8 },
  { name: 'beam5 b16', beam: 5, batch: 16, sentences: 16 },
  { name: 'beam5 b64', beam: 5, batch: 64, sentences: 64 },
];

/** The modes named in `spec` (all of `fallback` when undefined); an unknown name is refused. */
export function selectModes(spec: string | undefined, fallback: readonly string[]): DecodeMode[] {
  const names = spec === undefined ? fallback : spec.split(',').map((m) => m.trim());
  for (const n of names) {
    if (!DECODE_MODES.some((m) => m.name === n))
      throw new Error(`--modes: '${n}' is not one of ${DECODE_MODES.map((m) => m.name).join(', ')}`);
  }
  return DECODE_MODES.filter((m) => names.includes(m.name));
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

/** Seeded source id sequences, lengths 8-20 (like Multi30k) or each `length` long, no specials. */
export function sourceIds(count: number, srcVocab: number, seed: number, length?: number): number[][] {
  const rng = new SeededRandom(seed, 'decode-bench-sources');
  return Array.from({ length: count }, () => {
    const n = length ?? 8 + Math.floor(rng.next() * 13);
    return Array.from({ length: n }, () => 4 + Math.floor(rng.next() * (srcVocab - 4)));
  });
}

export function chunks<T>(xs: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += size) out.push(xs.slice(i, i + size));
  return out;
}

/**
 * Decodes every chunk with frost's runtime, each sentence forced to `len` tokens then </s>; returns
 * the total ms and the decoder steps each chunk took. `wholeRows`: every step fetches and scans the
 * whole log-probability rows, as before the decoder's top-k outputs.
 */
export async function frostDecode(
  rt: Seq2SeqRuntime,
  parts: number[][][],
  beam: number,
  len: number,
  wholeRows: boolean,
): Promise<{ ms: number; steps: number[] }> {
  const steps: number[] = [];
  const t0 = performance.now();
  const { stepTop } = rt.stepModel;
  for (const part of parts) {
    let n = 0;
    type State = Parameters<typeof rt.stepModel.step>[1];
    const model = {
      ...rt.stepModel,
      step: (prev: Int32Array, s: State) => (n++, rt.stepModel.step(prev, s)),
      ...(wholeRows || !stepTop
        ? { stepTop: undefined, topK: undefined }
        : { stepTop: (prev: Int32Array, s: State) => (n++, stepTop(prev, s)) }),
    };
    await generate(model, await rt.encode(part), part.length, { beam, minLen: len, maxLen: len });
    steps.push(n);
  }
  return { ms: performance.now() - t0, steps };
}

/** One mode's comparison: medians over rounds, and the median of the rounds' whole / top-k ratios. */
export interface WholeRowsRow {
  mode: string;
  wholeMsPerSentence: number;
  topMsPerSentence: number;
  /** Decoder steps per sentence-chunk decode on the top-k side (whole-row re-runs of undecided rows included). */
  stepsPerChunk: number;
  ratio: number;
}

/**
 * Times `before` (exported without the top-k outputs, decoding from whole rows) against `model`
 * (decoding from its top-k outputs), alternately: each round runs one then the other, the order
 * swapping every round, so both share the machine's load. Calls `onRow` as each mode finishes.
 */
export async function compareWholeRows(opts: {
  model: BenchModel;
  before: BenchModel;
  modes: readonly DecodeMode[];
  rounds: number;
  len: number;
  threads: number;
  onRow?: (row: WholeRowsRow) => void;
}): Promise<WholeRowsRow[]> {
  const { model, before, rounds, len, threads } = opts;
  if (before.card.graphs.decoder.top !== undefined || model.card.graphs.decoder.top === undefined)
    throw new Error('compareWholeRows: `before` must lack the top-k outputs and `model` have them');
  const [old, rt] = [
    await loadModelDir(before.dir, { intraOpNumThreads: threads }),
    await loadModelDir(model.dir, { intraOpNumThreads: threads }),
  ];
  const rows: WholeRowsRow[] = [];
  try {
    for (const mode of opts.modes) {
      const parts = chunks(sourceIds(mode.sentences, model.card.source!.tokens.length, 1), mode.batch);
      await frostDecode(old, parts, mode.beam, len, true);
      const warm = await frostDecode(rt, parts, mode.beam, len, false);
      const [whole, top]: [number[], number[]] = [[], []];
      for (let r = 0; r < rounds; r++) {
        if (r % 2 === 0) whole.push((await frostDecode(old, parts, mode.beam, len, true)).ms);
        top.push((await frostDecode(rt, parts, mode.beam, len, false)).ms);
        if (r % 2 === 1) whole.push((await frostDecode(old, parts, mode.beam, len, true)).ms);
      }
      const row: WholeRowsRow = {
        mode: mode.name,
        wholeMsPerSentence: median(whole) / mode.sentences,
        topMsPerSentence: median(top) / mode.sentences,
        stepsPerChunk: warm.steps.reduce((a, b) => a + b, 0) / warm.steps.length,
        ratio: median(whole.map((x, r) => x / top[r]!)),
      };
      rows.push(row);
      opts.onRow?.(row);
    }
  } finally {
    await old.release();
    await rt.release();
  }
  return rows;
}
