/**
 * ConvS2S's incremental decoder: what one decoder step costs at position 50 against position 1, in
 * onnxruntime-node, at batch 1 and 64. The step graph carries each layer's last k−1 convolution
 * inputs as state (models/archs/convs2s.ts), so the ratio should be ~1 (the bar: ≤ 1.5); a
 * decoder that re-ran the prefix would cost ~50× at position 50.
 *
 *   npm run bench:convs2s-step
 *   npm run bench:convs2s-step -- --preset wmt --vocab 8000 --reps 30 --src-len 20
 *
 * The model is built from initialisation (seeded) with `--vocab`-sized vocabularies, so anyone can
 * rerun it without a trained model; weights do not change the work a step does. Steps at the two
 * positions are timed interleaved (1, 50, 1, 50, ...) on the same states, so both share the
 * machine's load; the table gives the median of each and the ratio of the medians.
 */
import '@tensorflow/tfjs';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { SeededRandom } from '../core/random.ts';
import { createNodeSession, ort } from '../core/runtime/ort-node.ts';
import { buildModel, resolveArchConfig } from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';

const { values: args } = parseArgs({
  options: {
    preset: { type: 'string', default: 'small' },
    head: { type: 'string', default: 'learned' },
    vocab: { type: 'string', default: '8000' },
    batches: { type: 'string', default: '1,64' },
    'src-len': { type: 'string', default: '20' },
    positions: { type: 'string', default: '1,50' },
    reps: { type: 'string', default: '40' },
    threads: { type: 'string', default: '1' },
  },
});

const V = Number(args.vocab);
const srcLen = Number(args['src-len']);
const reps = Number(args.reps);
const [early, late] = args.positions.split(',').map(Number) as [number, number];

await initBackend({ prefer: 'wasm', quiet: true });
const model = buildModel(
  'convs2s',
  resolveArchConfig('convs2s', args.preset),
  { srcVocab: V, tgtVocab: V },
  { name: args.head },
  1,
);
const { encoder, decoder } = model.toOnnx();
const sessionOpts = { intraOpNumThreads: Number(args.threads) };
const enc = await createNodeSession(encoder.toBytes(), sessionOpts);
const dec = await createNodeSession(decoder.toBytes(), sessionOpts);
model.params.dispose();

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

console.log(
  `convs2s ${args.preset}, head ${args.head}, |V| ${V}, source length ${srcLen}, ${args.threads} ORT thread(s); ` +
    `${cpus()[0]?.model ?? 'cpu'} ×${cpus().length}, load ${loadavg()[0]!.toFixed(2)}`,
);
console.log(
  `\n| batch | step at ${early} (ms) | step at ${late} (ms) | ratio ${late}/${early} |\n|---:|---:|---:|---:|`,
);
for (const B of args.batches.split(',').map(Number)) {
  const rng = new SeededRandom(B, 'bench-src');
  const ids = BigInt64Array.from({ length: B * srcLen }, () => BigInt(4 + Math.floor(rng.next() * (V - 4))));
  const out = await enc.run({
    src_ids: new ort.Tensor('int64', ids, [B, srcLen]),
    src_lengths: new ort.Tensor('int64', new BigInt64Array(B).fill(BigInt(srcLen)), [B]),
  });
  const feeds: Record<string, ort.Tensor> = {};
  for (const name of [...model.stateNames, ...model.memoryNames]) feeds[name] = out[name]!;
  // Run real steps up to each position, keeping the state there (the windows hold real activations).
  const statesAt = new Map<number, Record<string, ort.Tensor>>();
  const prev = new ort.Tensor(
    'int64',
    BigInt64Array.from({ length: B }, (_, b) => BigInt(4 + b)),
    [B],
  );
  for (let t = 0; t <= late; t++) {
    if (t === early || t === late) statesAt.set(t, { ...feeds });
    const step = await dec.run({ ...feeds, prev_token: prev });
    for (const name of model.stateNames) feeds[name] = step[`next_${name}`]!;
  }
  const times: Record<number, number[]> = { [early]: [], [late]: [] };
  for (let r = 0; r < reps + 3; r++) {
    for (const p of [early, late]) {
      const t0 = performance.now();
      await dec.run({ ...statesAt.get(p)!, prev_token: prev });
      if (r >= 3) times[p]!.push(performance.now() - t0);
    }
  }
  const a = median(times[early]!);
  const b = median(times[late]!);
  console.log(`| ${B} | ${a.toFixed(3)} | ${b.toFixed(3)} | ${(b / a).toFixed(2)} |`);
}
await enc.release();
await dec.release();
