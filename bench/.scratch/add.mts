import '@tensorflow/tfjs';
import * as tf from '@tensorflow/tfjs-core';
import { initBackend } from '../../train/backend/select.ts';
await initBackend({});
for (const shape of [[512, 1536], [64, 18, 512], [64, 1536]]) {
  const a = tf.randomNormal(shape), b = tf.randomNormal(shape);
  for (const [name, f] of [['add', () => tf.add(a, b)], ['mul', () => tf.mul(a, b)], ['tanh', () => tf.tanh(a)], ['sigmoid', () => tf.sigmoid(a)], ['exp', () => tf.exp(a)], ['square', () => tf.square(a)], ['sum0', () => tf.sum(a, 0)]] as const) {
    const ts = [];
    for (let i = 0; i < 30; i++) { const c0 = process.cpuUsage(); const t0 = performance.now(); const c = (f as () => tf.Tensor)(); ts.push([performance.now() - t0, (process.cpuUsage(c0).user) / 1000]); c.dispose(); }
    ts.sort((x, y) => x[0] - y[0]);
    const n = a.size;
    console.log(shape.join('x'), name, 'wall', ts[15][0].toFixed(3), 'ms cpu', ts[15][1].toFixed(3), 'ns/elem', (ts[15][0] * 1e6 / n).toFixed(2));
  }
}
