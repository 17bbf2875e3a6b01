/**
 * Which first words send a language model's state into a degenerate fixed point when a stream
 * starts on them from a zero state (docs/language-modelling.md, the `tied` run): every sampled word
 * is fed from a zero state, followed by the same 100-token continuation (a stretch of the valid
 * split), and the continuation's perplexity is measured per first word. Words are sampled across
 * the training-frequency bins; each word's embedding norm is printed beside.
 *
 *   node --import tsx bench/investigations/lm-first-word.ts RUN_DIR [WORDS_PER_BIN]
 */
import * as tf from '@tensorflow/tfjs-core';
import '../../models/index.ts';
import { createNodeSession, ort } from '../../core/runtime/ort-node.ts';
import { SeededRandom } from '../../core/random.ts';
import { initBackend } from '../../train/backend/select.ts';
import { prepareLmData } from '../../train/lm/lm-data.ts';
import { frequencyBins, tokenCounts } from '../../train/lm/lm-evaluate.ts';
import { RunFolder } from '../../train/run-folder.ts';

const [runDir, perBinArg = '40'] = process.argv.slice(2);
if (!runDir) throw new Error('usage: node --import tsx bench/investigations/lm-first-word.ts RUN_DIR [WORDS_PER_BIN]');
await initBackend({ quiet: true });
const run = await RunFolder.openTask(runDir, 'lm');
const data = await prepareLmData(run.config, runDir, true);
const ckpt = run.findCheckpoint('best');
const model = run.rebuildLanguageModel(data.vocab.size, await run.loadCheckpoint(ckpt), ckpt);
const V = data.vocab.size;
const H = model.stateSize;
const counts = tokenCounts(data.streams.train, V);
const binOf = frequencyBins(counts, 5);
const norms = tf.tidy(() => tf.norm(model.params.get('decoder/embedding'), 'euclidean', 1).dataSync() as Float32Array);
const rng = new SeededRandom(1, 'first-word');
const picked: number[] = [];
for (let bin = 0; bin < 5; bin++) {
  const ids = Array.from({ length: V }, (_, id) => id).filter((id) => id >= 4 && binOf[id] === bin && counts[id] > 0);
  for (let k = 0; k < Number(perBinArg) && ids.length > 0; k++) picked.push(ids.splice(rng.int(ids.length), 1)[0]);
}
const extra = process.env.FIRST_WORDS?.split(',').map((w) => data.vocab.id(w)) ?? [];
picked.push(...extra);
// The continuation: 100 tokens of the valid split from its second line on.
const valid = data.streams.valid;
const from = valid.indexOf(2) + 1;
const continuation = valid.subarray(from, from + 101);
const session = await createNodeSession(model.toOnnx().toBytes());
const B = picked.length;
let state: Record<string, ort.Tensor> = Object.fromEntries(
  model.stateNames.map((n) => [n, new ort.Tensor('float32', new Float32Array(B * H), [B, H])]),
);
const nll = new Float64Array(B);
const feed = async (tokens: number[]) => {
  const out = await session.run({
    token: new ort.Tensor(
      'int64',
      BigInt64Array.from(tokens, (t) => BigInt(t)),
      [B],
    ),
    ...state,
  });
  state = Object.fromEntries(model.stateNames.map((n) => [n, out[`next_${n}`]]));
  return out.log_probs.data as Float32Array;
};
let lp = await feed(picked);
for (let i = 0; i + 1 < continuation.length; i++) {
  // Log p of continuation[i] after the first word (i = 0) or the continuation so far.
  for (let b = 0; b < B; b++) nll[b] -= lp[b * V + continuation[i]];
  lp = await feed(Array.from({ length: B }, () => continuation[i]));
}
const steps = continuation.length - 1;
const cMax = (name: string, b: number) => {
  const d = state[name].data as Float32Array;
  let m = 0;
  for (let j = b * H; j < (b + 1) * H; j++) m = Math.max(m, Math.abs(d[j]));
  return m;
};
const rows = picked.map((id, b) => ({
  word: data.vocab.token(id),
  bin: binOf[id] + 1,
  count: counts[id],
  norm: norms[id],
  ppl: Math.exp(nll[b] / steps),
  c: model.stateNames.filter((n) => n.startsWith('c')).map((n) => cMax(n, b)),
}));
const bad = rows.filter((r) => r.ppl > 1000);
console.log(
  `${runDir}: ${B} first words from a zero state, then ${steps} tokens of the valid split; median perplexity ${[...rows.map((r) => r.ppl)].sort((a, b) => a - b)[Math.floor(B / 2)].toFixed(1)}`,
);
for (let bin = 1; bin <= 5; bin++) {
  const inBin = rows.filter((r) => r.bin === bin);
  const mean = inBin.reduce((s, r) => s + r.norm, 0) / Math.max(1, inBin.length);
  console.log(
    `  bin ${bin}: ${inBin.filter((r) => r.ppl > 1000).length} of ${inBin.length} degenerate (perplexity > 1000); mean |e| ${mean.toFixed(2)}`,
  );
}
for (const r of [...bad, ...rows.filter((r) => extra.includes(data.vocab.id(r.word)))].slice(0, 20))
  console.log(
    `  '${r.word}' (bin ${r.bin}, ${r.count} in training, |e| ${r.norm.toFixed(2)}): perplexity ${r.ppl.toExponential(2)}, final max|c| ${r.c.map((c) => c.toFixed(1)).join(' / ')}`,
  );
const allNorms = Array.from(norms.subarray(4)).sort((a, b) => a - b);
console.log(
  `  |e| over the vocabulary: median ${allNorms[Math.floor(allNorms.length / 2)].toFixed(2)}, 99th percentile ${allNorms[Math.floor(allNorms.length * 0.99)].toFixed(2)}, max ${allNorms.at(-1)!.toFixed(2)}`,
);
await session.release();
model.params.dispose();
