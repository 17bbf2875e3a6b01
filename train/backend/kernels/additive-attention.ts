/**
 * Fused additive attention (FrostAdditiveAttention, FrostAdditiveAttentionGrad; the contract is in
 * models/layers/attention.ts) for the wasm backend, in wasm SIMD over the heap.
 *
 * Per decoder step the unfused graph made [B, S, att] passes for keys + q, tanh (four XNNPACK
 * passes), the scores' GEMV, and in the gradient Square, Sub, Multiply, the K = 1 outer product
 * dscores · vᵀ, the Sum over S for dq and an Add into the running dkeys, plus the attention's
 * batched products with the annotations and their gradients ([B, S, A] more). Here the forward
 * is one pass over the energies and one over the annotations; the gradient is one pass over each,
 * adding into the running sums of dkeys and dv that the previous step's gradient returned (the op
 * in attention.ts hands them back out once, after the last step, with the annotations' gradient
 * made for all steps at once).
 */
import type { KernelFunc, TensorInfo } from '@tensorflow/tfjs-core';
import { ATTENTION_GRAD_KERNEL, ATTENTION_KERNEL } from '../../../models/layers/attention.ts';
import { f32, forRange, i32, ModuleBuilder, seq, type Code, type FunctionBuilder } from './wasm-builder.ts';
import { at, exp, heapFunctions, heapOffset, lanesLoop, lanesSum, tanh, type Local } from './wasm-lanes.ts';
import { asWasmBackend, checkKernelInputs, f32View, type WasmBackend } from './wasm-internals.ts';

const fwdName = (biased: boolean) => `attention_fwd_${Number(biased)}`;
const bwdName = (accumulate: boolean) => `attention_bwd_${Number(accumulate)}`;

/** f32 at base + 4·index. */
const elem = (base: Local, index: Code): Code => i32.add(base.get(), i32.shl(index, i32.const(2)));

function buildForward(m: ModuleBuilder, biased: boolean): void {
  const f = m.func(fwdName(biased), [
    'q',
    'keys',
    'v',
    'bias',
    'ann',
    'context',
    'energy',
    'alpha',
    'rows',
    'len',
    'att',
    'width',
  ]);
  const [q, keys, v, bias, ann, context, energy, alpha, rows, len, att, width] = f.params;
  const b = f.local('i32');
  const s = f.local('i32');
  const attBytes = f.local('i32');
  const widthBytes = f.local('i32');
  const lenBytes = f.local('i32');
  const qRow = f.local('i32');
  const kRow = f.local('i32');
  const eRow = f.local('i32');
  const aRow = f.local('i32'); // alpha [b, :]
  const annB = f.local('i32');
  const annRow = f.local('i32');
  const cRow = f.local('i32');
  const biasRow = f.local('i32');
  const max = f.local('f32');
  const sum = f.local('f32');
  const inv = f.local('f32');
  const score = f.local('f32');

  // score_s = Σ_k tanh(keys[b, s, k] + q[b, k]) · v[k], energies stored on the way.
  const scoreOf = lanesSum(f, attBytes, (L, j) => {
    const e = f.local(L.type);
    return seq(
      e.set(tanh(f, L, L.add(L.load(at(kRow, j)), L.load(at(qRow, j))))),
      L.store(at(eRow, j), e.get()),
      L.mul(e.get(), L.load(at(v, j))),
    );
  });

  f.emit(
    attBytes.set(i32.shl(att.get(), i32.const(2))),
    widthBytes.set(i32.shl(width.get(), i32.const(2))),
    lenBytes.set(i32.shl(len.get(), i32.const(2))),
    forRange(
      b,
      i32.const(0),
      rows.get(),
      1,
      seq(
        qRow.set(i32.add(q.get(), i32.mul(b.get(), attBytes.get()))),
        kRow.set(i32.add(keys.get(), i32.mul(i32.mul(b.get(), len.get()), attBytes.get()))),
        eRow.set(i32.add(energy.get(), i32.mul(i32.mul(b.get(), len.get()), attBytes.get()))),
        aRow.set(i32.add(alpha.get(), i32.mul(b.get(), lenBytes.get()))),
        biasRow.set(i32.add(bias.get(), i32.mul(b.get(), lenBytes.get()))),
        annB.set(i32.add(ann.get(), i32.mul(i32.mul(b.get(), len.get()), widthBytes.get()))),
        cRow.set(i32.add(context.get(), i32.mul(b.get(), widthBytes.get()))),
        // scores (into alpha's row) and their max
        max.set(f32.const(-Infinity)),
        forRange(
          s,
          i32.const(0),
          len.get(),
          1,
          seq(
            score.set(scoreOf),
            biased ? score.set(f32.add(score.get(), f32.load(elem(biasRow, s.get())))) : [],
            f32.store(elem(aRow, s.get()), score.get()),
            max.set(f32.max(max.get(), score.get())),
            kRow.set(i32.add(kRow.get(), attBytes.get())),
            eRow.set(i32.add(eRow.get(), attBytes.get())),
          ),
        ),
        // α = softmax(scores)
        lanesLoop(f, lenBytes, (L, j) =>
          L.store(at(aRow, j), exp(f, L, L.sub(L.load(at(aRow, j)), L.splat(max.get())))),
        ),
        sum.set(lanesSum(f, lenBytes, (L, j) => L.load(at(aRow, j)))),
        inv.set(f32.div(f32.const(1), sum.get())),
        lanesLoop(f, lenBytes, (L, j) => L.store(at(aRow, j), L.mul(L.load(at(aRow, j)), L.splat(inv.get())))),
        // context = Σ_s α_s · ann[b, s, :]
        lanesLoop(f, widthBytes, (L, j) => L.store(at(cRow, j), L.constant(0))),
        annRow.set(annB.get()),
        forRange(
          s,
          i32.const(0),
          len.get(),
          1,
          seq(
            score.set(f32.load(elem(aRow, s.get()))),
            lanesLoop(f, widthBytes, (L, j) =>
              L.store(at(cRow, j), L.add(L.load(at(cRow, j)), L.mul(L.splat(score.get()), L.load(at(annRow, j))))),
            ),
            annRow.set(i32.add(annRow.get(), widthBytes.get())),
          ),
        ),
      ),
    ),
  );
}

function buildBackward(m: ModuleBuilder, accumulate: boolean): void {
  const names = [
    'dc',
    'ann',
    'alpha',
    'energy',
    'v',
    'dkIn',
    'dvIn',
    'dq',
    'dk',
    'dv',
    'scratch',
    'rows',
    'len',
    'att',
    'width',
  ];
  const f: FunctionBuilder = m.func(bwdName(accumulate), names);
  const [dc, ann, alpha, energy, v, dkIn, dvIn, dq, dk, dv, scratch, rows, len, att, width] = f.params;
  const b = f.local('i32');
  const s = f.local('i32');
  const attBytes = f.local('i32');
  const widthBytes = f.local('i32');
  const dcRow = f.local('i32');
  const annRow = f.local('i32');
  const aRow = f.local('i32');
  const kOff = f.local('i32'); // byte offset of row (b, s) in the [B, S, att] tensors
  const eRow = f.local('i32');
  const dqRow = f.local('i32');
  const t = f.local('f32');
  const ds = f.local('f32');
  const dkRow = f.local('i32');
  const dkInRow = f.local('i32');

  f.emit(
    attBytes.set(i32.shl(att.get(), i32.const(2))),
    widthBytes.set(i32.shl(width.get(), i32.const(2))),
    lanesLoop(f, attBytes, (L, j) => L.store(at(dv, j), accumulate ? L.load(at(dvIn, j)) : L.constant(0))),
    forRange(
      b,
      i32.const(0),
      rows.get(),
      1,
      seq(
        dcRow.set(i32.add(dc.get(), i32.mul(b.get(), widthBytes.get()))),
        aRow.set(i32.add(alpha.get(), i32.shl(i32.mul(b.get(), len.get()), i32.const(2)))),
        dqRow.set(i32.add(dq.get(), i32.mul(b.get(), attBytes.get()))),
        // dα_s = dc · ann[b, s, :] into scratch; t = Σ_s α_s dα_s
        annRow.set(i32.add(ann.get(), i32.mul(i32.mul(b.get(), len.get()), widthBytes.get()))),
        t.set(f32.const(0)),
        forRange(
          s,
          i32.const(0),
          len.get(),
          1,
          seq(
            ds.set(lanesSum(f, widthBytes, (L, j) => L.mul(L.load(at(dcRow, j)), L.load(at(annRow, j))))),
            f32.store(elem(scratch, s.get()), ds.get()),
            t.set(f32.add(t.get(), f32.mul(ds.get(), f32.load(elem(aRow, s.get()))))),
            annRow.set(i32.add(annRow.get(), widthBytes.get())),
          ),
        ),
        lanesLoop(f, attBytes, (L, j) => L.store(at(dqRow, j), L.constant(0))),
        kOff.set(i32.mul(i32.mul(b.get(), len.get()), attBytes.get())),
        forRange(
          s,
          i32.const(0),
          len.get(),
          1,
          seq(
            // dscore_s = α_s (dα_s − t)
            ds.set(f32.mul(f32.load(elem(aRow, s.get())), f32.sub(f32.load(elem(scratch, s.get())), t.get()))),
            eRow.set(i32.add(energy.get(), kOff.get())),
            dkRow.set(i32.add(dk.get(), kOff.get())),
            dkInRow.set(i32.add(dkIn.get(), kOff.get())),
            // g = (1 − e²) v dscore: dkeys += g, dq += g, dv += e dscore
            lanesLoop(f, attBytes, (L, j) => {
              const e = f.local(L.type);
              const g = f.local(L.type);
              const d = L.splat(ds.get());
              return seq(
                e.set(L.load(at(eRow, j))),
                g.set(L.mul(L.mul(L.sub(L.constant(1), L.mul(e.get(), e.get())), L.load(at(v, j))), d)),
                L.store(at(dkRow, j), accumulate ? L.add(L.load(at(dkInRow, j)), g.get()) : g.get()),
                L.store(at(dqRow, j), L.add(L.load(at(dqRow, j)), g.get())),
                L.store(at(dv, j), L.add(L.load(at(dv, j)), L.mul(e.get(), d))),
              );
            }),
            kOff.set(i32.add(kOff.get(), attBytes.get())),
          ),
        ),
      ),
    ),
  );
}

function buildModule(): ModuleBuilder {
  const m = new ModuleBuilder();
  buildForward(m, false);
  buildForward(m, true);
  buildBackward(m, false);
  buildBackward(m, true);
  return m;
}

export const additiveAttentionKernel: KernelFunc = ({ inputs, backend: b }) => {
  const backend: WasmBackend = asWasmBackend(b);
  const ins = inputs as Record<string, TensorInfo | undefined>;
  checkKernelInputs(ATTENTION_KERNEL, ins, ['q', 'keys', 'v', 'annotations']);
  const { q, keys, v, scoreBias, annotations } = ins as Record<string, TensorInfo>;
  const [B, S, att] = keys.shape;
  const rows = q.shape[0];
  if (rows > B) throw new RangeError(`${ATTENTION_KERNEL}: ${rows} query rows for ${B} annotation rows`);
  const A = annotations.shape[2];
  const context = backend.makeOutput([rows, A], 'float32');
  const energy = backend.makeOutput([rows, S, att], 'float32');
  const alpha = backend.makeOutput([rows, S], 'float32');
  const o = (t: TensorInfo | undefined) => heapOffset(backend, t);
  const fns = heapFunctions(backend, buildModule);
  // Rows are batch-major, so the queries' rows of keys, scoreBias and annotations are their first rows.
  fns[fwdName(scoreBias != null)](
    o(q),
    o(keys),
    o(v),
    o(scoreBias),
    o(annotations),
    o(context),
    o(energy),
    o(alpha),
    rows,
    S,
    att,
    A,
  );
  return [context, energy, alpha];
};

export const additiveAttentionGradKernel: KernelFunc = ({ inputs, backend: b }) => {
  const backend: WasmBackend = asWasmBackend(b);
  const ins = inputs as Record<string, TensorInfo | undefined>;
  checkKernelInputs(ATTENTION_GRAD_KERNEL, ins, ['dContext', 'annotations', 'alpha', 'energy', 'v']);
  const { dContext, annotations, alpha, energy, v, dKeys, dV } = ins;
  const accumulate = dKeys != null && dV != null;
  if (!accumulate && (dKeys != null || dV != null))
    throw new TypeError(`${ATTENTION_GRAD_KERNEL}: pass both dKeys and dV, or neither`);
  const [rows, S, att] = energy!.shape;
  const [B, , A] = annotations!.shape;
  if (rows > B) throw new RangeError(`${ATTENTION_GRAD_KERNEL}: ${rows} step rows for ${B} annotation rows`);
  const dq = backend.makeOutput([rows, att], 'float32');
  const dk = backend.makeOutput([B, S, att], 'float32');
  const dv = backend.makeOutput([att], 'float32');
  const scratch = backend.makeOutput([S], 'float32');
  const o = (t: TensorInfo | undefined) => heapOffset(backend, t);
  const fns = heapFunctions(backend, buildModule);
  fns[bwdName(accumulate)](
    o(dContext),
    o(annotations),
    o(alpha),
    o(energy),
    o(v),
    o(dKeys),
    o(dV),
    o(dq),
    o(dk),
    o(dv),
    o(scratch),
    rows,
    S,
    att,
    A,
  );
  backend.disposeData(scratch.dataId);
  if (rows < B) {
    // Rows past this step's queries (finished sentences) keep their running sums.
    const tail = f32View(backend, dk).subarray(rows * S * att);
    if (accumulate) tail.set(f32View(backend, dKeys!).subarray(rows * S * att));
    else tail.fill(0);
  }
  return [dq, dk, dv];
};
