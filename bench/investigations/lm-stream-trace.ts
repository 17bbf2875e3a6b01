/**
 * Traces one evaluation stream of a language-model run token by token, to tell a bug in frost from
 * a property of the model when one stream's perplexity explodes (docs/language-modelling.md, the
 * `tied` run): the same stream is scored four ways and compared.
 *
 *   A  as `frost eval` scores it: windows of `bptt` steps, state carried (train/lm/lm-evaluate.ts), the
 *      stream alone (B = 1) rather than beside the other nine;
 *   B  tfjs, one `model.step` per token (the unfused step, as export's parity check uses);
 *   C  the exported step graph in onnxruntime, one run per token (what the server runs);
 *   D  C with the state reset to zeros after every `</s>` (each line scored on its own).
 *
 * It prints where the loss jumps, the cell-state magnitudes there, the longest run of one token
 * and the longest line, so the question can be answered from numbers.
 *
 *   node --import tsx bench/investigations/lm-stream-trace.ts RUN_DIR [valid|test] [STREAM]
 *
 * Copy a run you must not write to first: prepareLmData reads the run's vocabulary only, but
 * nothing here should be trusted with a folder it does not own.
 */
import * as tf from '@tensorflow/tfjs-core';
import '../../models/index.ts';
import { createNodeSession, ort } from '../../core/runtime/ort-node.ts';
import { SPECIALS } from '../../core/vocab.ts';
import type { LmState } from '../../models/archs/lm-types.ts';
import { initBackend } from '../../train/backend/select.ts';
import { TokenStream } from '../../train/data/lm-stream.ts';
import { prepareLmData } from '../../train/lm/lm-data.ts';
import { scoreStream } from '../../train/lm/lm-evaluate.ts';
import { RunFolder } from '../../train/run-folder.ts';

const [runDir, split = 'valid', streamArg] = process.argv.slice(2);
if (!runDir || (split !== 'valid' && split !== 'test'))
  throw new Error('usage: node --import tsx bench/investigations/lm-stream-trace.ts RUN_DIR [valid|test] [STREAM]');
await initBackend({ quiet: true });
const run = await RunFolder.openTask(runDir, 'lm');
const { config } = run;
const data = await prepareLmData(config, runDir, true);
const ckpt = run.findCheckpoint('best');
const model = run.rebuildLanguageModel(data.vocab.size, await run.loadCheckpoint(ckpt), ckpt);
const ids = data.streams[split];
const all = scoreStream(model, ids, config.evalStreams, config.batch.bptt);
const per = all.logProbs.length / all.streams;
const pplOf = (lp: ArrayLike<number>, from = 0, to = lp.length) => {
  let nll = 0;
  for (let i = from; i < to; i++) nll -= lp[i];
  return Math.exp(nll / Math.max(1, to - from));
};
const streamPpl = Array.from({ length: all.streams }, (_, b) => pplOf(all.logProbs, b * per, (b + 1) * per));
const s = streamArg === undefined ? streamPpl.indexOf(Math.max(...streamPpl)) : Number(streamArg);
console.log(
  `${runDir} ${split}: ${all.streams} streams of ${per} predicted tokens; perplexities ${streamPpl.map((p) => p.toFixed(1)).join(' ')}`,
);
console.log(`tracing stream ${s}`);

const grid = new TokenStream(ids, all.streams);
const tokens = ids.subarray(s * grid.length, (s + 1) * grid.length);
const fromBatch = all.logProbs.subarray(s * per, (s + 1) * per);
const word = (id: number) => data.vocab.token(id);

// A: the stream alone, windows of bptt, as evaluation reads it.
const alone = scoreStream(model, tokens, 1, config.batch.bptt).logProbs;
let maxAB = 0;
for (let i = 0; i < per; i++) maxAB = Math.max(maxAB, Math.abs(alone[i] - fromBatch[i]));
console.log(
  `A  windows, alone: perplexity ${pplOf(alone).toFixed(1)}; max |Δ log p| vs. the batched evaluation ${maxAB.toExponential(2)}`,
);

// B and C (and D) token by token.
const H = model.stateSize;
const session = await createNodeSession(model.toOnnx().toBytes());
const zeros = () =>
  Object.fromEntries(model.stateNames.map((n) => [n, new ort.Tensor('float32', new Float32Array(H), [1, H])]));
let tfState: LmState = model.initialState(1);
let ortState: Record<string, ort.Tensor> = zeros();
let resetState: Record<string, ort.Tensor> = zeros();
const lpB = new Float32Array(per);
const lpC = new Float32Array(per);
const lpD = new Float32Array(per);
/** Per position, the largest |c| of each layer in C. */
const cMax = model.stateNames.filter((n) => n.startsWith('c')).map(() => new Float32Array(per));
const hMax = model.stateNames.filter((n) => n.startsWith('h')).map(() => new Float32Array(per));
let maxBC = 0;
const absMax = (t: ort.Tensor) => (t.data as Float32Array).reduce((m, v) => Math.max(m, Math.abs(v)), 0);
for (let i = 0; i < per; i++) {
  const tok = tokens[i];
  const target = tokens[i + 1];
  const out = model.step(tf.tensor1d([tok], 'int32'), tfState);
  tf.dispose(Object.values(tfState));
  tfState = out.state;
  lpB[i] = (out.logProbs.dataSync() as Float32Array)[target];
  out.logProbs.dispose();
  const feed = (state: Record<string, ort.Tensor>) =>
    session.run({ token: new ort.Tensor('int64', BigInt64Array.from([BigInt(tok)]), [1]), ...state });
  const c = await feed(ortState);
  ortState = Object.fromEntries(model.stateNames.map((n) => [n, c[`next_${n}`]]));
  lpC[i] = (c.log_probs.data as Float32Array)[target];
  maxBC = Math.max(maxBC, Math.abs(lpB[i] - lpC[i]));
  model.stateNames.forEach((n, k) => {
    const l = k >> 1; // names alternate h0, c0, h1, c1
    (n.startsWith('c') ? cMax : hMax)[l][i] = absMax(ortState[n]);
  });
  // Each line read as the server scores a text: from a zero state, fed `</s>` first.
  const d = await feed(tok === SPECIALS.eos.id ? zeros() : resetState);
  lpD[i] = (d.log_probs.data as Float32Array)[target];
  resetState = Object.fromEntries(model.stateNames.map((n) => [n, d[`next_${n}`]]));
}
tf.dispose(Object.values(tfState));
console.log(
  `B  tfjs step by step: perplexity ${pplOf(lpB).toFixed(1)}; max |Δ log p| vs. A ${Array.from(lpB)
    .reduce((m, v, i) => Math.max(m, Math.abs(v - alone[i])), 0)
    .toExponential(2)}`,
);
console.log(
  `C  onnxruntime step graph: perplexity ${pplOf(lpC).toFixed(1)}; max |Δ log p| vs. B ${maxBC.toExponential(2)}`,
);
console.log(`D  onnxruntime, state reset after every </s>: perplexity ${pplOf(lpD).toFixed(1)}`);

// Where does it go wrong? The first position from which a 200-token moving perplexity stays far above the rest.
const win = 200;
const moving = Array.from({ length: per - win }, (_, i) => pplOf(lpC, i, i + win));
const healthy = Math.min(...moving.slice(0, Math.max(1, Math.floor(moving.length / 10))));
const jump = moving.findIndex((p) => p > 50 * Math.max(healthy, 1));
console.log(
  `moving perplexity (${win} tokens) at every 500th position: ${moving
    .filter((_, i) => i % 500 === 0)
    .map((p, k) => `${k * 500}:${p.toFixed(0)}`)
    .join(' ')}`,
);
const worst = Array.from(lpC.keys())
  .sort((a, b) => lpC[a] - lpC[b])
  .slice(0, 5);
console.log(`lowest log p: ${worst.map((i) => `${i}(${word(tokens[i + 1])}) ${lpC[i].toFixed(1)}`).join(', ')}`);
if (jump >= 0) {
  // Within the window where it turns, the first token whose loss goes far past anything before.
  let at = jump;
  for (let i = jump; i < jump + win; i++)
    if (-lpC[i] > 20) {
      at = i;
      break;
    }
  console.log(
    `degenerates near position ${at} of ${per}; context: …${Array.from(tokens.subarray(Math.max(0, at - 25), at + 1), word).join(' ')} ⟶ ${word(tokens[at + 1])}`,
  );
  for (const i of [0, at - 200, at - 50, at - 10, at - 1, at, at + 1, at + 10, at + 100, at + 1000, per - 1].filter(
    (i) => i >= 0 && i < per,
  ))
    console.log(
      `  pos ${i}: log p ${lpC[i].toFixed(2)} (reset ${lpD[i].toFixed(2)}); max|c| ${cMax.map((m) => m[i].toFixed(1)).join(' / ')}; max|h| ${hMax.map((m) => m[i].toFixed(3)).join(' / ')}`,
    );
  console.log(
    `  perplexity before ${at}: ${pplOf(lpC, 0, at).toFixed(1)}, from it: ${pplOf(lpC, at).toFixed(1)}; with resets: ${pplOf(lpD, 0, at).toFixed(1)} / ${pplOf(lpD, at).toFixed(1)}`,
  );
}
console.log(
  `max |c| over the stream by layer: ${cMax.map((m) => m.reduce((a, b) => Math.max(a, b), 0).toFixed(1)).join(' / ')}`,
);

// The stream's contents: the longest run of one token and the longest line.
let run1 = { len: 0, at: 0, tok: 0 };
for (let i = 0; i < tokens.length;) {
  let j = i;
  while (j < tokens.length && tokens[j] === tokens[i]) j++;
  if (j - i > run1.len) run1 = { len: j - i, at: i, tok: tokens[i] };
  i = j;
}
let line = { len: 0, at: 0 };
for (let i = 0, start = 0; i < tokens.length; i++)
  if (tokens[i] === SPECIALS.eos.id) {
    if (i - start > line.len) line = { len: i - start, at: start };
    start = i + 1;
  }
const unk = tokens.reduce((n, t) => n + (t === SPECIALS.unk.id ? 1 : 0), 0);
console.log(
  `contents: longest run of one token ${run1.len}× '${word(run1.tok)}' at ${run1.at}; longest line ${line.len} tokens at ${line.at}; <unk> ${unk} of ${tokens.length}`,
);

// Where does the state go wrong: from the first tokens, or later? And is it the start that does it?
type OrtState = Record<string, ort.Tensor>;
/** Runs `ids` from `state` through the step graph: each position's log p of the next id, and the final state. */
async function runOnnx(state: OrtState, ids: Int32Array): Promise<{ lp: Float32Array; state: OrtState }> {
  const lp = new Float32Array(ids.length - 1);
  for (let i = 0; i + 1 < ids.length; i++) {
    const out = await session.run({
      token: new ort.Tensor('int64', BigInt64Array.from([BigInt(ids[i])]), [1]),
      ...state,
    });
    state = Object.fromEntries(model.stateNames.map((n) => [n, out[`next_${n}`]]));
    lp[i] = (out.log_probs.data as Float32Array)[ids[i + 1]];
  }
  return { lp, state };
}
console.log(`first tokens of stream ${s}: ${Array.from(tokens.subarray(0, 12), word).join(' ')}`);
console.log(
  `  log p, max|c| by layer: ${Array.from({ length: 12 }, (_, i) => `${word(tokens[i + 1])} ${lpC[i].toFixed(1)} [${cMax.map((m) => m[i].toFixed(1)).join('/')}]`).join(', ')}`,
);
for (const skip of [1, 2, 5, 20]) {
  const { lp } = await runOnnx(zeros(), tokens.subarray(skip, skip + 2001));
  console.log(
    `  from a zero state at position ${skip} instead of 0: perplexity of the next 2000 tokens ${pplOf(lp).toFixed(1)}`,
  );
}
if (s > 0) {
  // One continuous stream: stream s read on from where stream s − 1 ends (as 1-stream evaluation does).
  const prev = ids.subarray((s - 1) * grid.length, s * grid.length);
  const { state } = await runOnnx(zeros(), prev);
  const { lp } = await runOnnx(state, tokens.subarray(0, 2001));
  console.log(`  carried on from stream ${s - 1}'s end: perplexity of its first 2000 tokens ${pplOf(lp).toFixed(1)}`);
}
await session.release();
model.params.dispose();
