/**
 * The fused GRU cell (FrostGruCell, FrostGruCellGrad; the contract is in models/layers/gru.ts) for
 * the wasm backend: one pass over the row's gates in wasm SIMD, reading and writing the heap.
 *
 * It replaces, per time step, the ~15 forward ops of the gate maths (slices, adds, σ, tanh, the
 * blend) and their ~30 gradient ops (PadV2 for every slice's gradient, Mul/Sub/Square chains, the
 * bias Sum), each a tfjs kernel call with its engine and tape bookkeeping. The encoder's padding
 * mask is folded in too (three more ops a step, and their gradients).
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { GRU_CELL_GRAD_KERNEL, GRU_CELL_KERNEL } from '../../../models/layers/gru.ts';
import { f32, forRange, i32, ModuleBuilder, seq, type Code } from './wasm-builder.ts';
import { at, heapFunctions, heapOffset, lanesLoop, sigmoid, tanh, type Lanes, type Local } from './wasm-lanes.ts';
import { asWasmBackend, checkKernelInputs, type WasmBackend } from './wasm-internals.ts';

const variants = [
  [false, false],
  [false, true],
  [true, false],
  [true, true],
] as const;

const fwdName = (twoInputs: boolean, masked: boolean) => `gru_fwd_${Number(twoInputs)}${Number(masked)}`;
const bwdName = (masked: boolean) => `gru_bwd_${Number(masked)}`;

/** Byte pointers to the three gate blocks (z, r, n) of one row of a [B, 3H] tensor, or the four of a cache row. */
function gatePointers(f: ReturnType<ModuleBuilder['func']>, count: number): Local[] {
  return Array.from({ length: count }, () => f.local('i32'));
}

/** p[0] = base + row, p[k] = p[k−1] + gate bytes. */
function setGates(p: Local[], base: Local, row: Code, gate: Local): Code {
  return seq(p[0].set(i32.add(base.get(), row)), ...p.slice(1).map((q, k) => q.set(i32.add(p[k].get(), gate.get()))));
}

function buildForward(m: ModuleBuilder, twoInputs: boolean, masked: boolean): void {
  const f = m.func(fwdName(twoInputs, masked), [
    'gx',
    'gx2',
    'hw',
    'bh',
    'h',
    'mask',
    'out',
    'cache',
    'rows',
    'hidden',
  ]);
  const [gx, gx2, hw, bh, h, mask, out, cache, rows, hidden] = f.params;
  const b = f.local('i32');
  const gate = f.local('i32'); // H · 4 bytes
  const row = f.local('i32'); // byte offset of row b in a [B, H] tensor
  const m1 = f.local('f32');
  const [xz, xr, xn] = gatePointers(f, 3);
  const [yz, yr, yn] = gatePointers(f, 3);
  const [wz, wr, wn] = gatePointers(f, 3);
  const [bz, br, bn] = gatePointers(f, 3);
  const [cz, cr, cn, cg] = gatePointers(f, 4);
  const hRow = f.local('i32');
  const outRow = f.local('i32');

  const body = (L: Lanes, j: Local): Code => {
    const ld = (p: Local) => L.load(at(p, j));
    const x = (p: Local, q: Local) => (twoInputs ? L.add(ld(p), ld(q)) : ld(p));
    const [z, r, g, n, hv, cell] = [0, 1, 2, 3, 4, 5].map(() => f.local(L.type));
    const blended = masked ? L.add(hv.get(), L.mul(L.splat(m1.get()), L.sub(cell.get(), hv.get()))) : cell.get();
    return seq(
      z.set(sigmoid(f, L, L.add(x(xz, yz), L.add(ld(wz), ld(bz))))),
      r.set(sigmoid(f, L, L.add(x(xr, yr), L.add(ld(wr), ld(br))))),
      g.set(L.add(ld(wn), ld(bn))),
      n.set(tanh(f, L, L.add(x(xn, yn), L.mul(r.get(), g.get())))),
      hv.set(ld(hRow)),
      cell.set(L.add(n.get(), L.mul(z.get(), L.sub(hv.get(), n.get())))),
      L.store(at(outRow, j), blended),
      L.store(at(cz, j), z.get()),
      L.store(at(cr, j), r.get()),
      L.store(at(cn, j), n.get()),
      L.store(at(cg, j), g.get()),
    );
  };

  f.emit(
    gate.set(i32.shl(hidden.get(), i32.const(2))),
    setGates([bz, br, bn], bh, i32.const(0), gate),
    forRange(
      b,
      i32.const(0),
      rows.get(),
      1,
      seq(
        row.set(i32.mul(b.get(), gate.get())),
        masked ? m1.set(f32.load(i32.add(mask.get(), i32.shl(b.get(), i32.const(2))))) : [],
        setGates([xz, xr, xn], gx, i32.mul(row.get(), i32.const(3)), gate),
        twoInputs ? setGates([yz, yr, yn], gx2, i32.mul(row.get(), i32.const(3)), gate) : [],
        setGates([wz, wr, wn], hw, i32.mul(row.get(), i32.const(3)), gate),
        setGates([cz, cr, cn, cg], cache, i32.shl(row.get(), i32.const(2)), gate),
        hRow.set(i32.add(h.get(), row.get())),
        outRow.set(i32.add(out.get(), row.get())),
        lanesLoop(f, gate, body),
      ),
    ),
  );
}

function buildBackward(m: ModuleBuilder, masked: boolean): void {
  const f = m.func(bwdName(masked), ['dout', 'cache', 'h', 'mask', 'dgx', 'dhw', 'dh', 'dbh', 'rows', 'hidden']);
  const [dout, cache, h, mask, dgx, dhw, dh, dbh, rows, hidden] = f.params;
  const b = f.local('i32');
  const gate = f.local('i32');
  const gates3 = f.local('i32');
  const row = f.local('i32');
  const m1 = f.local('f32');
  const [cz, cr, cn, cg] = gatePointers(f, 4);
  const [xz, xr, xn] = gatePointers(f, 3);
  const [wz, wr, wn] = gatePointers(f, 3);
  const [bz, br, bn] = gatePointers(f, 3);
  const dRow = f.local('i32');
  const hRow = f.local('i32');
  const dhRow = f.local('i32');

  const body = (L: Lanes, j: Local): Code => {
    const ld = (p: Local) => L.load(at(p, j));
    const st = (p: Local, v: Code) => L.store(at(p, j), v);
    const acc = (p: Local, v: Code) => L.store(at(p, j), L.add(ld(p), v));
    const one = L.constant(1);
    const [d, c, z, r, n, g, dn, dxn, dz, dr] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map(() => f.local(L.type));
    return seq(
      d.set(ld(dRow)),
      c.set(masked ? L.mul(d.get(), L.splat(m1.get())) : d.get()),
      z.set(ld(cz)),
      r.set(ld(cr)),
      n.set(ld(cn)),
      g.set(ld(cg)),
      st(dhRow, masked ? L.add(L.sub(d.get(), c.get()), L.mul(z.get(), c.get())) : L.mul(z.get(), d.get())),
      dn.set(L.mul(c.get(), L.sub(one, z.get()))),
      dxn.set(L.mul(dn.get(), L.sub(one, L.mul(n.get(), n.get())))),
      dz.set(L.mul(L.mul(c.get(), L.sub(ld(hRow), n.get())), L.mul(z.get(), L.sub(one, z.get())))),
      dr.set(L.mul(L.mul(dxn.get(), g.get()), L.mul(r.get(), L.sub(one, r.get())))),
      st(xz, dz.get()),
      st(xr, dr.get()),
      st(xn, dxn.get()),
      st(wz, dz.get()),
      st(wr, dr.get()),
      st(wn, L.mul(dxn.get(), r.get())),
      acc(bz, dz.get()),
      acc(br, dr.get()),
      acc(bn, L.mul(dxn.get(), r.get())),
    );
  };

  f.emit(
    gate.set(i32.shl(hidden.get(), i32.const(2))),
    gates3.set(i32.mul(gate.get(), i32.const(3))),
    lanesLoop(f, gates3, (L, j) => L.store(at(dbh, j), L.constant(0))),
    setGates([bz, br, bn], dbh, i32.const(0), gate),
    forRange(
      b,
      i32.const(0),
      rows.get(),
      1,
      seq(
        row.set(i32.mul(b.get(), gate.get())),
        masked ? m1.set(f32.load(i32.add(mask.get(), i32.shl(b.get(), i32.const(2))))) : [],
        setGates([cz, cr, cn, cg], cache, i32.shl(row.get(), i32.const(2)), gate),
        setGates([xz, xr, xn], dgx, i32.mul(row.get(), i32.const(3)), gate),
        setGates([wz, wr, wn], dhw, i32.mul(row.get(), i32.const(3)), gate),
        dRow.set(i32.add(dout.get(), row.get())),
        hRow.set(i32.add(h.get(), row.get())),
        dhRow.set(i32.add(dh.get(), row.get())),
        lanesLoop(f, gate, body),
      ),
    ),
  );
}

function buildModule(): ModuleBuilder {
  const m = new ModuleBuilder();
  for (const [twoInputs, masked] of variants) buildForward(m, twoInputs, masked);
  buildBackward(m, false);
  buildBackward(m, true);
  return m;
}

export const gruCellKernel: KernelFunc = ({ inputs, backend: b }) => {
  const backend: WasmBackend = asWasmBackend(b);
  checkKernelInputs(GRU_CELL_KERNEL, inputs as Record<string, TensorInfo | undefined>, ['gx', 'hw', 'bh', 'h']);
  const { gx, gx2, hw, bh, h, mask } = inputs as Record<string, TensorInfo>;
  const [B, H] = h.shape;
  const out = backend.makeOutput([B, H], 'float32');
  const cache = backend.makeOutput([B, 4 * H], 'float32');
  const fns = heapFunctions(backend, buildModule);
  const o = (t: TensorInfo | undefined) => heapOffset(backend, t);
  fns[fwdName(gx2 != null, mask != null)](o(gx), o(gx2), o(hw), o(bh), o(h), o(mask), o(out), o(cache), B, H);
  return [out, cache];
};

export const gruCellGradKernel: KernelFunc = ({ inputs, backend: b }) => {
  const backend: WasmBackend = asWasmBackend(b);
  checkKernelInputs(GRU_CELL_GRAD_KERNEL, inputs as Record<string, TensorInfo | undefined>, ['dhNext', 'cache', 'h']);
  const { dhNext, cache, h, mask } = inputs as Record<string, TensorInfo>;
  const [B, H] = h.shape;
  const dgx = backend.makeOutput([B, 3 * H], 'float32');
  const dhw = backend.makeOutput([B, 3 * H], 'float32');
  const dh = backend.makeOutput([B, H], 'float32');
  const dbh = backend.makeOutput([3 * H], 'float32');
  const fns = heapFunctions(backend, buildModule);
  const o = (t: TensorInfo | undefined) => heapOffset(backend, t);
  fns[bwdName(mask != null)](o(dhNext), o(cache), o(h), o(mask), o(dgx), o(dhw), o(dh), o(dbh), B, H);
  return [dgx, dhw, dh, dbh];
};
