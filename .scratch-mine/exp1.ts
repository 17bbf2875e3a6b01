import * as ort from 'onnxruntime-node';
import { buildModel, resolveArchConfig } from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';
import { convertPrecision } from '../export/precision.ts';
import { readGraphInfo } from '../export/inspect-graph.ts';

await initBackend({ prefer: 'wasm', quiet: true });
const preset = process.argv[2] ?? 'tiny';
const V = Number(process.argv[3] ?? 2000);
const model = buildModel('rnn-attn', resolveArchConfig('rnn-attn', preset), { srcVocab: V, tgtVocab: V }, { name: 'learned' } as any, 1);
const { encoder, decoder } = model.toOnnx({});
const enc = encoder.toBytes(), dec = decoder.toBytes();
const info = readGraphInfo(dec);
console.log(info.inputs, info.outputs, info.initializers.map(i => `${i.name} ${i.elemType} [${i.dims}] ${i.bytes}`).join('\n'));
console.log(readGraphInfo(enc).initializers.map(i => `${i.name} ${i.elemType} [${i.dims}] ${i.bytes}`).join('\n'));
async function time(bytes: Uint8Array, label: string) {
  let t0 = performance.now();
  const s = await ort.InferenceSession.create(bytes, { graphOptimizationLevel: 'all' });
  const create = performance.now() - t0;
  const B = 5, S = 12; const H = info.inputs.find(i => i.name === 'state')!.dims[1] as number;
  const A = info.inputs.find(i => i.name === 'enc_out')!.dims[2] as number;
  const att = info.inputs.find(i => i.name === 'enc_keys')!.dims[2] as number;
  const feeds = {
    prev_token: new ort.Tensor('int64', BigInt64Array.from({ length: B }, (_, i) => BigInt(i + 4)), [B]),
    state: new ort.Tensor('float32', new Float32Array(B * H).fill(0.1), [B, H]),
    enc_out: new ort.Tensor('float32', new Float32Array(B * S * A).fill(0.1), [B, S, A]),
    enc_keys: new ort.Tensor('float32', new Float32Array(B * S * att).fill(0.1), [B, S, att]),
    src_mask: new ort.Tensor('float32', new Float32Array(B * S).fill(1), [B, S]),
  };
  let out = await s.run(feeds);
  t0 = performance.now();
  const N = 50;
  for (let i = 0; i < N; i++) out = await s.run(feeds);
  const step = (performance.now() - t0) / N;
  console.log(label, 'bytes', bytes.length, 'create ms', create.toFixed(1), 'step ms', step.toFixed(3), 'lp0', (out.log_probs.data as Float32Array).slice(0, 3));
  await s.release();
}
await time(dec, 'fp32');
for (const p of ['fp16', 'int8'] as const) {
  const r = convertPrecision(dec, p);
  await time(r.bytes, p);
  const re = convertPrecision(enc, p);
  const s = await ort.InferenceSession.create(re.bytes);
  const o = await s.run({ src_ids: new ort.Tensor('int64', BigInt64Array.from([5n, 6n, 7n]), [1, 3]), src_lengths: new ort.Tensor('int64', BigInt64Array.from([3n]), [1]) });
  console.log(p, 'enc ok', Object.keys(o), r.converted.map(c => `${c.name}:${c.maxAbsError.toExponential(1)}`).join(' '));
}
