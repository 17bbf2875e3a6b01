import '@tensorflow/tfjs';
import * as tf from '@tensorflow/tfjs-core';
import { initBackend } from './train/backend/select.ts';
await initBackend({ quiet: true });
const a = tf.randomUniform([64, 512]); const b = tf.randomUniform([512, 1536]);
const k = tf.randomUniform([64, 18, 512]);
const med = (xs: number[]) => xs.sort((x, y) => x - y)[xs.length >> 1];
const work = () => tf.tidy(() => { for (let j = 0; j < 10; j++) tf.tanh(tf.add(k, tf.reshape(a, [64, 1, 512]))); });
for (let r = 0; r < 2; r++) {
  const tg: number[] = [], ta: number[] = [], tb: number[] = [];
  for (let i = 0; i < 200; i++) {
    let t0 = performance.now(); const y = tf.matMul(a, b); tg.push(performance.now() - t0); y.dispose();
    t0 = performance.now(); work(); ta.push(performance.now() - t0);
  }
  for (let i = 0; i < 200; i++) { const t0 = performance.now(); work(); tb.push(performance.now() - t0); }
  console.log(`${process.env.OMP_WAIT_POLICY ?? process.env.GOMP_SPINCOUNT ?? 'default'}: gemm ${med(tg).toFixed(3)} ms; 10×(add+tanh) after a gemm ${med(ta).toFixed(3)} ms, alone ${med(tb).toFixed(3)} ms`);
}
