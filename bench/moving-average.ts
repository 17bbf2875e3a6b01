/**
 * The weights' moving average (`--ema-decay`, train/optim/parameter-average.ts): one update of it over the
 * parameters of the `small` rnn-attn `fixed-l2` model on a joint 8,000-piece vocabulary with a compact output layer
 * (the Multi30k de→en subword run of docs/subwords.md; its frozen rows are not averaged, so their number does not
 * matter here), through the fused wasm kernel (FrostMovingAverage) and through the tfjs-ops fallback; interleaved
 * rounds of 10 updates, medians.
 *
 *   npm run bench:moving-average     (BENCH_RUNS=15 for more rounds; default 7)
 */
import { buildModel, resolveArchConfig } from '../models/index.ts';
import { setFusedMode } from '../models/layers/fused.ts';
import { initBackend } from '../train/backend/select.ts';
import { ParameterAverage } from '../train/optim/parameter-average.ts';

const VOCAB = 8000;
const KEPT = 4143;
const ROUNDS = Number(process.env.BENCH_RUNS ?? 7);
const UPDATES = 10;

await initBackend({ prefer: 'wasm' });
const model = buildModel(
  'rnn-attn',
  resolveArchConfig('rnn-attn', 'small'),
  {
    srcVocab: VOCAB,
    tgtVocab: VOCAB,
    jointEmbedding: true,
    excludedTargets: Array.from({ length: VOCAB - KEPT }, (_, i) => KEPT + i),
    compactOutput: true,
  },
  { name: 'fixed-l2', options: {} },
  1,
);
const average = new ParameterAverage(model.params.learnable, 0.999);
let step = 0;

/** Milliseconds per update over one round. */
function round(mode: 'auto' | 'ops'): number {
  const previous = setFusedMode(mode);
  const t0 = performance.now();
  for (let i = 0; i < UPDATES; i++) average.update(++step);
  average.shadow.values().next().value!.dataSync();
  setFusedMode(previous);
  return (performance.now() - t0) / UPDATES;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
round('auto');
round('ops');
const times = { fused: [] as number[], ops: [] as number[] };
for (let r = 0; r < ROUNDS; r++) {
  times.fused.push(round('auto'));
  times.ops.push(round('ops'));
}
const [fused, ops] = [median(times.fused), median(times.ops)];
console.log(`${model.params.counts().learnable.toLocaleString('en')} learnable parameters`);
console.log(`moving-average update, median of ${ROUNDS} interleaved rounds of ${UPDATES}:`);
console.log(`  FrostMovingAverage (fused) ${fused.toFixed(1)} ms`);
console.log(`  tfjs ops                   ${ops.toFixed(1)} ms  (${(ops / fused).toFixed(2)}× the fused)`);
average.dispose();
model.params.dispose();
