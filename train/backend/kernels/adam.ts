/**
 * FrostAdam (the contract is in train/optim/adam.ts) for the wasm backend: the moment and
 * parameter updates in one wasm SIMD pass over p, m, v and g, in the order and float32 rounding
 * of the tfjs ops it replaces. The ops made 13 passes over every parameter tensor a step
 * (10.7M floats for the `small` model with a learned output layer).
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { util } from '@tensorflow/tfjs-core';
import { ADAM_KERNEL, type AdamUpdateAttrs } from '../../optim/adam.ts';
import { f32, i32, ModuleBuilder, seq } from './wasm-builder.ts';
import { at, heapFunctions, heapOffset, lanesLoop } from './wasm-lanes.ts';
import { asWasmBackend, checkKernelInputs } from './wasm-internals.ts';

const ATTRS = ['lr', 'beta1', 'oneMinusBeta1', 'beta2', 'oneMinusBeta2', 'epsilon', 'scale'] as const;

function buildModule(): ModuleBuilder {
  const m = new ModuleBuilder();
  // Float attributes travel as their float32 bit patterns (the builder's functions take i32s).
  const f = m.func('adam', ['p', 'm', 'v', 'g', 'p2', 'm2', 'v2', 'n', ...ATTRS]);
  const [p, mo, vo, g, p2, m2, v2, n] = f.params;
  const bytes = f.local('i32');
  const attr = (name: (typeof ATTRS)[number]) => f32.reinterpretI32(f.param(name).get());
  f.emit(
    bytes.set(i32.shl(n.get(), i32.const(2))),
    lanesLoop(f, bytes, (L, j) => {
      const c = (name: (typeof ATTRS)[number]) => L.splat(attr(name));
      const [gs, mn, vn] = [0, 1, 2].map(() => f.local(L.type));
      return seq(
        gs.set(L.mul(L.load(at(g, j)), c('scale'))),
        mn.set(L.add(L.mul(L.load(at(mo, j)), c('beta1')), L.mul(gs.get(), c('oneMinusBeta1')))),
        vn.set(L.add(L.mul(L.load(at(vo, j)), c('beta2')), L.mul(L.mul(gs.get(), gs.get()), c('oneMinusBeta2')))),
        L.store(at(m2, j), mn.get()),
        L.store(at(v2, j), vn.get()),
        L.store(
          at(p2, j),
          L.sub(L.load(at(p, j)), L.mul(L.div(mn.get(), L.add(L.sqrt(vn.get()), c('epsilon'))), c('lr'))),
        ),
      );
    }),
  );
  return m;
}

const bits = (x: number) => new Int32Array(Float32Array.of(x).buffer)[0];

export const adamKernel: KernelFunc = ({ inputs, backend: b, attrs }) => {
  const backend = asWasmBackend(b);
  checkKernelInputs(ADAM_KERNEL, inputs as Record<string, TensorInfo | undefined>, ['p', 'm', 'v', 'g']);
  const { p, m, v, g } = inputs as Record<string, TensorInfo>;
  const a = attrs as unknown as AdamUpdateAttrs;
  const outs = [p, m, v].map(() => backend.makeOutput(p.shape, 'float32'));
  const o = (t: TensorInfo) => heapOffset(backend, t);
  // 1 − β as the ops compute it: a float64 difference, then a float32 scalar.
  const values = {
    lr: a.lr,
    beta1: a.beta1,
    oneMinusBeta1: 1 - a.beta1,
    beta2: a.beta2,
    oneMinusBeta2: 1 - a.beta2,
    epsilon: a.epsilon,
    scale: a.scale,
  };
  heapFunctions(backend, buildModule).adam(
    o(p),
    o(m),
    o(v),
    o(g),
    ...outs.map(o),
    util.sizeFromShape(p.shape),
    ...ATTRS.map((k) => bits(values[k])),
  );
  return outs;
};
