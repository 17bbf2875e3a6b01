/**
 * What one decoder step of an exported Transformer costs deep into a sentence, against the first
 * step: with the key/value cache a step at position 50 computes the same projections as a step at
 * position 1 and only attends over 50 cached positions instead of 1, so its cost should grow little.
 *
 *   npm run bench:transformer-step                                   # small preset, batch 1 and 64
 *   npm run bench:transformer-step -- --preset iwslt --reps 20 --threads 2
 *
 * The model is `transformer <preset>` with the `learned` head built from its seeded initialisation
 * on Multi30k-sized vocabularies (bench/decode-model.ts's), exported in memory the way `frost
 * export` does: anyone can rerun it without a trained model. For each batch size the cache is
 * filled by real steps up to position 50; then steps at position 1 (empty cache) and position 50
 * (49 cached positions) run interleaved `--reps` times, so both share the machine's load, and the
 * table gives medians and their ratio. The reorder columns add what beam search costs on top, at
 * position 50, with a beam-like order (in each group of 5 rows the parents are rows 0, 0, 1, 0, 2:
 * row 0 keeps its cache, the other four take another row's, so most rows move): `gather` copies every cache
 * row into new buffers (row-state.ts's gatherRows, what the runtime did for every reorder), `in
 * place` rewrites the step's own output, copying only rows that move (reorderRowsInPlace, what
 * the runtime does now for a step's output).
 */
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import * as ort from 'onnxruntime-node';
import { createNodeSession } from '../core/runtime/ort-node.ts';
import { gatherRows, reorderRowsInPlace, type HostTensor } from '../core/runtime/row-state.ts';
import { buildModel, resolveArchConfig } from '../models/index.ts';
import { DEFAULT_VOCAB } from './decode-model.ts';

const { values: args } = parseArgs({
  options: {
    preset: { type: 'string', default: 'small' },
    batches: { type: 'string', default: '1,64' },
    position: { type: 'string', default: '50' },
    srcLen: { type: 'string', default: '20' },
    reps: { type: 'string', default: '30' },
    /** onnxruntime intra-op threads (1: the serving default on a shared 2-core machine, docs/decoding-speed.md). */
    threads: { type: 'string', default: '1' },
  },
});

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const ids = (n: number, offset: number) =>
  BigInt64Array.from({ length: n }, (_, i) => BigInt(4 + ((i * 37 + offset) % 5000)));

const model = buildModel(
  'transformer',
  resolveArchConfig('transformer', args.preset),
  { srcVocab: DEFAULT_VOCAB.src, tgtVocab: DEFAULT_VOCAB.tgt },
  { name: 'learned' },
  1,
);
const graphs = model.toOnnx();
const threads = Number(args.threads);
const encoder = await createNodeSession(graphs.encoder.toBytes(), { intraOpNumThreads: threads });
const decoder = await createNodeSession(graphs.decoder.toBytes(), { intraOpNumThreads: threads });
model.params.dispose();
const position = Number(args.position);
const reps = Number(args.reps);
const S = Number(args.srcLen);

console.log(
  `transformer ${args.preset}, learned head, |V| ${DEFAULT_VOCAB.tgt}, source length ${S}, ${threads} intra-op thread(s); ` +
    `${cpus().length} cores, load ${loadavg()[0]!.toFixed(1)}`,
);
console.log(
  '| batch | step at 1 (ms) | step at %d (ms) | ratio | +gather at %d | ratio | +in place at %d | ratio |',
  position,
  position,
  position,
);
console.log('|---:|---:|---:|---:|---:|---:|---:|---:|');
for (const B of args.batches.split(',').map(Number)) {
  const memory = await encoder.run({
    src_ids: new ort.Tensor('int64', ids(B * S, B), [B, S]),
    src_lengths: new ort.Tensor(
      'int64',
      BigInt64Array.from({ length: B }, () => BigInt(S)),
      [B],
    ),
  });
  const prev = (t: number) => new ort.Tensor('int64', ids(B, t), [B]);
  const initial = { ...memory };
  let late = { ...memory };
  for (let t = 1; t < position; t++) {
    const out = await decoder.run({ ...late, prev_token: prev(t) });
    const next = { ...late };
    for (const name of model.stateNames) next[name] = out[`next_${name}`]!;
    late = next;
  }
  const parents = [0, 0, 1, 0, 2];
  const order = Int32Array.from({ length: B }, (_, i) => {
    const group = i - (i % 5);
    return Math.min(B - 1, group + parents[i % 5]!);
  });
  type Reorder = 'none' | 'gather' | 'in-place';
  const timeStep = async (feeds: Record<string, ort.Tensor>, reorder: Reorder) => {
    const t0 = performance.now();
    const out = await decoder.run({ ...feeds, prev_token: prev(7) });
    for (const name of model.stateNames) {
      const t = out[`next_${name}`] as HostTensor;
      if (reorder === 'gather') gatherRows(ort, t, order);
      else if (reorder === 'in-place') reorderRowsInPlace(ort, t, order);
    }
    return performance.now() - t0;
  };
  const times = { early: [] as number[], late: [] as number[], gather: [] as number[], inPlace: [] as number[] };
  const cases: [number[], Record<string, ort.Tensor>, Reorder][] = [
    [times.early, initial, 'none'],
    [times.late, late, 'none'],
    [times.gather, late, 'gather'],
    [times.inPlace, late, 'in-place'],
  ];
  for (let r = 0; r < reps + 2; r++) {
    // Each round starts with a different case, so none always follows the largest allocation.
    for (let i = 0; i < cases.length; i++) {
      const [into, feeds, reorder] = cases[(r + i) % cases.length]!;
      const ms = await timeStep(feeds, reorder);
      if (r >= 2) into.push(ms); // two warm-up rounds
    }
  }
  const [a, b, c, d] = [median(times.early), median(times.late), median(times.gather), median(times.inPlace)];
  console.log(
    `| ${B} | ${a.toFixed(2)} | ${b.toFixed(2)} | ${(b / a).toFixed(2)} | ${c.toFixed(2)} | ${(c / a).toFixed(2)} | ${d.toFixed(2)} | ${(d / a).toFixed(2)} |`,
  );
}
await encoder.release();
await decoder.release();
