/**
 * Issue #41: what a Transformer step would cost if its key/value caches did not make a round trip through JS. Today
 * the step graph concatenates each cache with the new position and returns it whole (`next_self_*`), and
 * onnxruntime-node copies every returned cache into a new JS buffer. The prototype in
 * transformer-append-cache.patch (FROST_APPEND=1) returns only the new position's keys and values (`new_self_*`,
 * [rows, h, 1, d/h]) and attends over caches with spare capacity [rows, h, cap, d/h], positions ≥ its `cache_len`
 * input masked, plus the new position; JS writes that position into its buffers. This times one step at `POS` both
 * ways (process CPU ms, medians of `REPS` alternating steps) and checks that both give the same candidates.
 *
 *   git apply bench/investigations/transformer-append-cache.patch
 *   ROWS=80 POS=15 CAPMUL=2 node --import tsx bench/investigations/transformer-append-cache.ts
 *   git apply -R bench/investigations/transformer-append-cache.patch
 *
 * CAPMUL: the buffers' capacity as a multiple of POS (1: exactly POS + 1; 2: what doubling leaves at worst).
 */
import type { Tensor } from 'onnxruntime-common';
import { createNodeSession, ort } from '../../core/runtime/ort-node.ts';
import { buildModel, resolveArchConfig } from '../../models/index.ts';

const rows = Number(process.env.ROWS ?? 64);
const P = Number(process.env.POS ?? 10);
const capMul = Number(process.env.CAPMUL ?? 1);
const reps = Number(process.env.REPS ?? 40);
const S = 20;
const model = buildModel(
  'transformer',
  resolveArchConfig('transformer', 'small'),
  { srcVocab: 8000, tgtVocab: 8000 },
  { name: 'learned' },
  1,
);
const [d, h] = [256, 4]; // transformer small
const dk = d / h;
const normal = model.toOnnx();
process.env.FROST_APPEND = '1';
const append = model.toOnnx();
if (!append.decoder.toGraphProto().input.some((i) => i.name === 'cache_len'))
  throw new Error('the step graph has no cache_len input: apply transformer-append-cache.patch first');
const enc = await createNodeSession(normal.encoder.toBytes(), { intraOpNumThreads: 1 });
const decA = await createNodeSession(normal.decoder.toBytes(), { intraOpNumThreads: 1 });
const decB = await createNodeSession(append.decoder.toBytes(), { intraOpNumThreads: 1 });
const ids = BigInt64Array.from({ length: rows * S }, (_, i) => BigInt(4 + ((i * 37) % 7000)));
const encoded = await enc.run({
  src_ids: new ort.Tensor('int64', ids, [rows, S]),
  src_lengths: new ort.Tensor(
    'int64',
    BigInt64Array.from({ length: rows }, () => BigInt(S)),
    [rows],
  ),
});
let feeds: Record<string, Tensor> = {};
for (const n of decA.inputNames) if (encoded[n]) feeds[n] = encoded[n];
const prev = new ort.Tensor(
  'int64',
  BigInt64Array.from({ length: rows }, (_, i) => BigInt(5 + i)),
  [rows],
);
const state = model.stateNames;
const fetchA = ['top_log_probs', 'top_tokens', ...state.map((n) => `next_${n}`)];
for (let t = 0; t < P; t++) {
  const out = await decA.run({ ...feeds, prev_token: prev }, fetchA);
  feeds = { ...feeds };
  for (const n of state) feeds[n] = out[`next_${n}`]!;
}
// The same caches in buffers of capacity `cap`.
const cap = Math.max(P + 1, Math.round(P * capMul));
const buffers: Record<string, Float32Array> = {};
const feedsB: Record<string, Tensor> = {};
for (const n of decB.inputNames) if (feeds[n] && !state.includes(n)) feedsB[n] = feeds[n];
for (const n of state) {
  const src = feeds[n]!.data as Float32Array;
  const b = new Float32Array(rows * h * cap * dk);
  for (let r = 0; r < rows * h; r++) b.set(src.subarray(r * P * dk, (r + 1) * P * dk), r * cap * dk);
  buffers[n] = b;
  feedsB[n] = new ort.Tensor('float32', b, [rows, h, cap, dk]);
}
feedsB.cache_len = new ort.Tensor('int64', BigInt64Array.from([BigInt(P)]), []);
const fetchB = ['top_log_probs', 'top_tokens', ...state.map((n) => `new_${n}`)];

const [oa, ob] = [
  await decA.run({ ...feeds, prev_token: prev }, fetchA),
  await decB.run({ ...feedsB, prev_token: prev }, fetchB),
];
const [va, vb] = [oa.top_log_probs!.data as Float32Array, ob.top_log_probs!.data as Float32Array];
const maxDiff = va.reduce((m, x, i) => Math.max(m, Math.abs(x - vb[i]!)), 0);
const sameTokens = (oa.top_tokens!.data as Int32Array).every((x, i) => x === (ob.top_tokens!.data as Int32Array)[i]);
console.log(`candidates: max |difference| ${maxDiff.toExponential(2)}, same tokens: ${sameTokens}`);

const cpuMs = async (f: () => Promise<unknown>) => {
  const c0 = process.cpuUsage();
  await f();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
};
const concatStep = () => decA.run({ ...feeds, prev_token: prev }, fetchA);
const appendStep = async () => {
  const out = await decB.run({ ...feedsB, prev_token: prev }, fetchB);
  for (const n of state) {
    const fresh = out[`new_${n}`]!.data as Float32Array;
    const b = buffers[n]!;
    for (let r = 0; r < rows * h; r++) b.set(fresh.subarray(r * dk, (r + 1) * dk), (r * cap + P) * dk);
  }
};
const [a, b]: number[][] = [[], []];
for (let r = 0; r < reps; r++) {
  a.push(await cpuMs(concatStep));
  b.push(await cpuMs(appendStep));
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[xs.length >> 1]!;
console.log(
  `rows ${rows}, position ${P}, capacity ${cap}: concat + fetched caches ${median(a).toFixed(2)} ms, ` +
    `append ${median(b).toFixed(2)} ms, ${(median(a) / median(b)).toFixed(2)}×`,
);
