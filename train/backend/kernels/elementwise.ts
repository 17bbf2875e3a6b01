/**
 * Tanh for the wasm backend as 2·σ(2x) − 1 on XNNPACK's kernels.
 *
 * The stock wasm Tanh calls the C library's tanhf element by element (15-45 ns an element here),
 * while the stock Sigmoid, Multiply and Sub run XNNPACK's vectorised kernels (σ ≈ 1.3 ns, the
 * others ≈ 0.2-0.3 ns). A training step of rnn-attn takes tanh of the attention energies
 * [B, S, att] at every decoder step and of the output features [N, d]. tanh(x) = 2σ(2x) − 1
 * exactly; in float32 the result is within ≈ 2e-7 absolute of tanhf (XNNPACK's σ is accurate to
 * a few ulp of values ≤ 1, and 2σ − 1 doubles that), i.e. at the resolution float32 has near ±1,
 * though not relative to tiny |x| (where 2σ − 1 cancels). Training and the ONNX parity checks
 * (1e-4) do not see the difference; test/train-speed-kernels.test.ts bounds it.
 * Written in JS over the heap instead, tanh and exp ran no faster than the stock C loops (JS loops
 * over typed arrays cost 1-2 ns an element before any maths), so those stay as they were.
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { getKernel } from '@tensorflow/tfjs-core';
import { asWasmBackend, f32View, type WasmBackend } from './wasm-internals.ts';

const constants = new WeakMap<WasmBackend, { one: TensorInfo; two: TensorInfo }>();

/** Scalars 1 and 2 on the heap, kept for the backend's lifetime. */
function scalars(backend: WasmBackend): { one: TensorInfo; two: TensorInfo } {
  let c = constants.get(backend);
  if (c == null || !backend.dataIdMap.has(c.one.dataId) || !backend.dataIdMap.has(c.two.dataId)) {
    const one = backend.makeOutput([], 'float32');
    f32View(backend, one)[0] = 1;
    const two = backend.makeOutput([], 'float32');
    f32View(backend, two)[0] = 2;
    c = { one, two };
    constants.set(backend, c);
  }
  return c;
}

function kernel(name: string): KernelFunc {
  const k = getKernel(name, 'wasm');
  if (k == null) throw new Error(`frost Tanh: no wasm kernel ${name}`);
  return k.kernelFunc;
}

export function sigmoidTanh(stock: KernelFunc): KernelFunc {
  return (args) => {
    const x = args.inputs.x as TensorInfo;
    if (x.dtype !== 'float32') return stock(args);
    const backend = asWasmBackend(args.backend);
    const { one, two } = scalars(backend);
    const run = (name: string, inputs: Record<string, TensorInfo>) =>
      kernel(name)({ inputs, backend: args.backend, attrs: {} }) as TensorInfo;
    const x2 = run('Multiply', { a: x, b: two });
    const s = run('Sigmoid', { x: x2 });
    backend.disposeData(x2.dataId);
    const s2 = run('Multiply', { a: s, b: two });
    backend.disposeData(s.dataId);
    const out = run('Sub', { a: s2, b: one });
    backend.disposeData(s2.dataId);
    return out;
  };
}
