/**
 * FrostLayerNorm and FrostLayerNormGrad (the contract is in models/layers/layer-norm.ts) for the wasm backend, in
 * wasm SIMD over the heap (wasm-builder.ts), row by row: forward, Σx and Σ(x − mean)² then one pass writing x̂ and
 * y; backward, Σ dy·γ and Σ dy·γ·x̂ then one pass writing dx and adding dy·x̂ and dy into dγ and dβ. Sums in
 * float32 lanes, as the stock kernels accumulate. The op graph they replace ran ≈ 10 kernels forward and ≈ 25
 * backward per layer norm, each a pass over [rows, d] and a call the engine books. (The first version, JS loops
 * over the heap, ran ≈ 10 ns an element: slower than the ops it replaced.)
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { util } from '@tensorflow/tfjs-core';
import { LAYER_NORM_GRAD_KERNEL, LAYER_NORM_KERNEL } from '../../../models/layers/layer-norm.ts';
import { f32, forRange, i32, ModuleBuilder, seq } from './wasm-builder.ts';
import { at, heapFunctions, heapOffset, lanesLoop, lanesSum } from './wasm-lanes.ts';
import { asWasmBackend, checkKernelInputs } from './wasm-internals.ts';

function buildModule(): ModuleBuilder {
  const m = new ModuleBuilder();
  {
    const f = m.func('ln_fwd', ['x', 'gamma', 'beta', 'y', 'unit', 'rstd', 'rows', 'cols', 'epsBits']);
    const [x, gamma, beta, y, unit, rstd, rows, cols, epsBits] = f.params;
    const r = f.local('i32');
    const rowBytes = f.local('i32');
    const xr = f.local('i32');
    const ur = f.local('i32');
    const yr = f.local('i32');
    const mean = f.local('f32');
    const s = f.local('f32');
    const n = f32.convertI32S(cols.get());
    f.emit(
      rowBytes.set(i32.shl(cols.get(), i32.const(2))),
      xr.set(x.get()),
      ur.set(unit.get()),
      yr.set(y.get()),
      forRange(
        r,
        i32.const(0),
        rows.get(),
        1,
        seq(
          mean.set(
            f32.div(
              lanesSum(f, rowBytes, (L, j) => L.load(at(xr, j))),
              n,
            ),
          ),
          s.set(
            f32.div(
              f32.const(1),
              f32.sqrt(
                f32.add(
                  f32.div(
                    lanesSum(f, rowBytes, (L, j) => {
                      const c = L.sub(L.load(at(xr, j)), L.splat(mean.get()));
                      return L.mul(c, c);
                    }),
                    n,
                  ),
                  f32.reinterpretI32(epsBits.get()),
                ),
              ),
            ),
          ),
          f32.store(i32.add(rstd.get(), i32.shl(r.get(), i32.const(2))), s.get()),
          lanesLoop(f, rowBytes, (L, j) =>
            seq(
              L.store(at(ur, j), L.mul(L.sub(L.load(at(xr, j)), L.splat(mean.get())), L.splat(s.get()))),
              L.store(at(yr, j), L.add(L.mul(L.load(at(ur, j)), L.load(at(gamma, j))), L.load(at(beta, j)))),
            ),
          ),
          xr.set(i32.add(xr.get(), rowBytes.get())),
          ur.set(i32.add(ur.get(), rowBytes.get())),
          yr.set(i32.add(yr.get(), rowBytes.get())),
        ),
      ),
    );
  }
  {
    const f = m.func('ln_bwd', ['dy', 'unit', 'rstd', 'gamma', 'dx', 'dgamma', 'dbeta', 'rows', 'cols']);
    const [dy, unit, rstd, gamma, dx, dgamma, dbeta, rows, cols] = f.params;
    const r = f.local('i32');
    const rowBytes = f.local('i32');
    const dyr = f.local('i32');
    const ur = f.local('i32');
    const dxr = f.local('i32');
    const meanG = f.local('f32');
    const meanGU = f.local('f32');
    const s = f.local('f32');
    const n = f32.convertI32S(cols.get());
    f.emit(
      rowBytes.set(i32.shl(cols.get(), i32.const(2))),
      lanesLoop(f, rowBytes, (L, j) =>
        seq(L.store(at(dgamma, j), L.constant(0)), L.store(at(dbeta, j), L.constant(0))),
      ),
      dyr.set(dy.get()),
      ur.set(unit.get()),
      dxr.set(dx.get()),
      forRange(
        r,
        i32.const(0),
        rows.get(),
        1,
        seq(
          meanG.set(
            f32.div(
              lanesSum(f, rowBytes, (L, j) => L.mul(L.load(at(dyr, j)), L.load(at(gamma, j)))),
              n,
            ),
          ),
          meanGU.set(
            f32.div(
              lanesSum(f, rowBytes, (L, j) =>
                L.mul(L.mul(L.load(at(dyr, j)), L.load(at(gamma, j))), L.load(at(ur, j))),
              ),
              n,
            ),
          ),
          s.set(f32.load(i32.add(rstd.get(), i32.shl(r.get(), i32.const(2))))),
          lanesLoop(f, rowBytes, (L, j) =>
            seq(
              L.store(
                at(dxr, j),
                L.mul(
                  L.splat(s.get()),
                  L.sub(
                    L.sub(L.mul(L.load(at(dyr, j)), L.load(at(gamma, j))), L.splat(meanG.get())),
                    L.mul(L.load(at(ur, j)), L.splat(meanGU.get())),
                  ),
                ),
              ),
              L.store(at(dgamma, j), L.add(L.load(at(dgamma, j)), L.mul(L.load(at(dyr, j)), L.load(at(ur, j))))),
              L.store(at(dbeta, j), L.add(L.load(at(dbeta, j)), L.load(at(dyr, j)))),
            ),
          ),
          dyr.set(i32.add(dyr.get(), rowBytes.get())),
          ur.set(i32.add(ur.get(), rowBytes.get())),
          dxr.set(i32.add(dxr.get(), rowBytes.get())),
        ),
      ),
    );
  }
  return m;
}

function rowsOf(kernel: string, x: TensorInfo, gamma: TensorInfo): { rows: number; d: number } {
  const d = x.shape[x.shape.length - 1];
  if (gamma.shape.length !== 1 || gamma.shape[0] !== d)
    throw new RangeError(`${kernel}: gamma must be [${d}], got [${gamma.shape.join(', ')}]`);
  return { rows: d === 0 ? 0 : util.sizeFromShape(x.shape) / d, d };
}

export const layerNormKernel: KernelFunc = ({ inputs, backend: b, attrs }) => {
  const backend = asWasmBackend(b);
  checkKernelInputs(LAYER_NORM_KERNEL, inputs as Record<string, TensorInfo | undefined>, ['x', 'gamma', 'beta']);
  const { x, gamma, beta } = inputs as Record<string, TensorInfo>;
  const { rows, d } = rowsOf(LAYER_NORM_KERNEL, x, gamma);
  const y = backend.makeOutput(x.shape, 'float32');
  const unit = backend.makeOutput(x.shape, 'float32');
  const rstd = backend.makeOutput([rows], 'float32');
  const epsBits = new Int32Array(Float32Array.of(Number((attrs as { epsilon?: number }).epsilon)).buffer)[0];
  heapFunctions(backend, buildModule).ln_fwd(
    heapOffset(backend, x),
    heapOffset(backend, gamma),
    heapOffset(backend, beta),
    heapOffset(backend, y),
    heapOffset(backend, unit),
    heapOffset(backend, rstd),
    rows,
    d,
    epsBits,
  );
  return [y, unit, rstd];
};

export const layerNormGradKernel: KernelFunc = ({ inputs, backend: b }) => {
  const backend = asWasmBackend(b);
  checkKernelInputs(LAYER_NORM_GRAD_KERNEL, inputs as Record<string, TensorInfo | undefined>, [
    'dy',
    'unit',
    'rstd',
    'gamma',
  ]);
  const { dy, unit, rstd, gamma } = inputs as Record<string, TensorInfo>;
  const { rows, d } = rowsOf(LAYER_NORM_GRAD_KERNEL, unit, gamma);
  const dx = backend.makeOutput(unit.shape, 'float32');
  const dGamma = backend.makeOutput([d], 'float32');
  const dBeta = backend.makeOutput([d], 'float32');
  heapFunctions(backend, buildModule).ln_bwd(
    heapOffset(backend, dy),
    heapOffset(backend, unit),
    heapOffset(backend, rstd),
    heapOffset(backend, gamma),
    heapOffset(backend, dx),
    heapOffset(backend, dGamma),
    heapOffset(backend, dBeta),
    rows,
    d,
  );
  return [dx, dGamma, dBeta];
};
