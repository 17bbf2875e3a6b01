import * as ort from 'onnxruntime-node';
import { buildModel, resolveArchConfig } from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';
import { convertPrecision } from '../export/precision.ts';
import { readGraphInfo } from '../export/inspect-graph.ts';

await initBackend({ prefer: 'wasm', quiet: true });
const preset = process.argv[2] ?? 'tiny';
const V = Number(process.argv[3] ?? 2000);
const model = buildModel('rnn-attn', resolveArchConfig('rnn-attn', preset), { srcVocab: V, tgtVocab: V }, { name: process.argv[4] ?? 'learned' } as any, 1);
const { decoder } = model.toOnnx({});
const dec = decoder.toBytes();
const info = readGraphInfo(dec);
const opts = { graphOptimizationLevel: 'all' as const, intraOpNumThreads: 1 };
async function time(bytes: Uint8Array, label: string) {
  const creates: number[] = [];
  let s!: ort.InferenceSession;
  for (let k = 0; k < 3; k++) { const t0 = performance.now(); s = await ort.InferenceSession.create(bytes, opts); creates.push(performance.now() - t0); if (k < 2) await s.release(); }
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
  for (let i = 0; i < 5; i++) out = await s.run(feeds);
  const t0 = performance.now();
  const N = 30;
  for (let i = 0; i < N; i++) out = await s.run(feeds);
  const step = (performance.now() - t0) / N;
  console.log(label.padEnd(14), 'bytes', String(bytes.length).padStart(10), 'create ms', creates.map(c => c.toFixed(1)).join('/'), 'step ms', step.toFixed(3), 'lp0', (out.log_probs.data as Float32Array)[0]);
  await s.release();
}
for (let rep = 0; rep < 2; rep++) {
  await time(dec, 'fp32');
  await time(convertPrecision(dec, 'fp16').bytes, 'fp16');
  
  await time(convertPrecision(dec, 'int8').bytes, 'int8-dq');
  
  await time(convertPrecision(dec, 'int8').bytes, 'int8-castmul');
  
}
