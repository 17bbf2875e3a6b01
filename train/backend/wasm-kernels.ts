/**
 * frost's kernels for @tensorflow/tfjs-backend-wasm 4.22, and why each exists.
 *
 * FINDINGS (measured on the 2-vCPU dev VM, single-threaded SIMD build; bench/wasm-kernels.ts
 * has the kernel numbers, a training step is the rnn-attn "small" preset, batch 64 × 20 target
 * tokens, |V| = 6000, Adam):
 *
 *  - BatchMatMul. XNNPACK (15-26 GFLOP/s here) runs only when transposeA = transposeB = false and
 *    both batch sizes are 1; everything else falls to a scalar C++ loop (1-1.5 GFLOP/s, and it
 *    reads the transposed operand with a stride). MatMul's gradients are exactly those cases:
 *    dZ·Wᵀ and fᵀ·dZ of the output layer took 4.8 s and 7.4 s vs 0.48 and 0.59 s now (10-12×);
 *    a GRU step's x·W gradients 12-19×. kernels/batch-matmul.ts transposes the operand once
 *    (weights used at every time step stay transposed: TransposeCache) and calls XNNPACK; batched
 *    products fold the batch into the rows when b is shared, else one XNNPACK call per entry.
 *  - _FusedMatMul (tf.fused.matMul; no frost model uses it yet). Same loop problem, and the loop
 *    adds the wrong bias element to every row after the first (bias[min(i·N+j, N−1)]); its XNNPACK
 *    path reads N bias values out of a 1-element bias. Same fix, unfused fallback otherwise.
 *  - UnsortedSegmentSum: not registered on wasm at all, so tf.grad through tf.gather (every
 *    embedding lookup) threw. kernels/unsorted-segment-sum.ts: one scatter-add pass, 1.8 ms for
 *    a [1280, 256] gradient into [6000, 256]. The rest of Gather's gradient is Reshape and
 *    Transpose with an identity permutation (for axis 0), which the stock Transpose copies.
 *    Of the cpu backend's kernels, wasm lacks only this one that seq2seq training needs (the others
 *    missing: Einsum, complex/FFT, ragged, Conv2DBackpropFilter, DepthwiseConv2dNative grads).
 *  - Identity: the gradient tape clones every op's saved inputs (engine.clone → Identity), and the
 *    stock wasm Identity memcpy's them: every MatMul copied its weight matrix in the forward pass.
 *    Aliased (like the cpu backend's Identity): 2380 copies per step gone.
 *  - Transpose: permutations that move only size-1 axes alias instead of copying.
 *  - Slice / SplitV / Unpack: the stock Slice first copies the WHOLE input out of the heap
 *    (readSync), once per output for SplitV/Unpack: tf.unstack of the encoder's [20, 64, 768]
 *    projections and the gradient of every tf.concat copied the full tensor per piece
 *    (Unpack alone: 0.55 s per step). Now only the slice is copied.
 *  - GatherV2: the stock C++ loop rebuilds a location vector (heap-allocated) per element: 20 ms to
 *    look up 1280 embeddings of 256 (≈ 60 ns/float), the same per beam-search reorder of a
 *    [64, 20, 512] memory. Row copies now (kernels/gather.ts).
 *  - Conv2DBackpropFilter: not registered on wasm (tf.grad of tf.conv2d wrt the filter threw);
 *    Conv2DBackpropInput: a scalar C++ loop at ≈ 2 GFLOP/s, 5-10× slower than the forward Conv2D.
 *    Both are now im2col/col2im in JS plus one GEMM (kernels/conv2d-backprop-*.ts), for the
 *    captioning CNN (models/layers/conv-encoder.ts).
 *  Not slow, checked: Sigmoid/Tanh gradients (composites of Mul/Sub), Softmax, logSumExp (Max,
 *  Sub, Exp, Sum, Log), OneHot, Select, Cumsum, TopK, PadV2 (Slice's gradient), Concat (copies
 *  from heap views).
 *
 *  Training step: stock kernels (+ UnsortedSegmentSum so that it runs at all) ≈ 30-33 s; with
 *  the kernels above ≈ 3.9-4.0 s, ≈ 80% of it GEMM near XNNPACK's single-thread speed.
 *
 * TRAINING-SPEED PASS (bench/train-speed.ts, bench/train-profile.ts; Multi30k de→en, small preset,
 * batch 64, ≈ 890 target tokens a step; A/B figures are interleaved runs in one process because
 * this VM's load swung from 1.5 to 7 during the work):
 *  - BatchMatMul → native MLAS (kernels/native-gemm.ts): XNNPACK's wasm GEMM is SIMD128 without
 *    FMA, 13-26 GFLOP/s a thread; onnxruntime-node's MLAS (a dependency already) runs the same
 *    products at 37-55 GFLOP/s on one core, ≈ 80 on two, in place on the heap. Same 4 batches
 *    (922 target tokens a step), machine quiet, bench/train-profile.ts: before this pass 3.32 s a
 *    step; all of it but native GEMM 3.13 s; with native GEMM (2 MLAS threads) 1.09 s.
 *  - K = 1 products (the attention's αᵀ·dc outer products, per decoder step) → broadcast Multiply:
 *    5-6 ms → 0.3 ms a call.
 *  - Tanh → 2σ(2x) − 1 on XNNPACK's Sigmoid/Multiply/Sub (kernels/elementwise.ts): 9× (13.8 →
 *    1.5 ms for [64, 17, 512]).
 *  - Sum over leading axes (every bias gradient) without the transpose (kernels/sum.ts): 1.3-1.6×.
 *  - OneHot: the stock kernel ignores dtype float32 (writes int32 bits); fixed (kernels/one-hot.ts).
 *  - The loss (models/loss.ts) keeps softmax(z) from one XNNPACK Softmax and derives logsumexp
 *    from it: 5× faster forward+backward on [1216, 5921] (133 → 25 ms).
 *  - Recurrent weights' gradients once per step instead of once per time step
 *    (models/layers/shared-matmul.ts): the per-time-step x_tᵀ·dy_t GEMMs (K = 64) and the [512,
 *    1536] Adds that accumulated them are gone.
 *  Tried and dropped (slower or no faster than stock): JS kernels over the heap for Exp, Tanh, a
 *  fused softmax-cross-entropy and small batched matmuls: a JS loop over a typed array costs 1-2 ns
 *  an element before any maths, while XNNPACK's elementwise passes run ≈ 0.3 ns.
 *  What is left (profile after these): GEMM ≈ 55-60% of the step (per-step [64, 512]·[512, 1536]
 *  products at ≈ 50 GFLOP/s, the |V|-sized ones), then ≈ 7000 kernel calls of engine and tape
 *  overhead (≈ 15% outside kernels), Add/Multiply/Sum of the per-step gate maths, stock Exp (13-18
 *  ns an element, only in drill/hadamard paths now) and the stock batched matmuls of the attention.
 *
 * FUSED-OPS PASS (issue #8; bench/train-profile.ts, same 3 batches, machine load 7-16 throughout, so
 * judged by kernel calls, CPU time and in-process A/B ratios: --ab unfused):
 *  - Kernel calls per step 6,933 → 1,280. frost builds wasm SIMD modules of its own at start-up
 *    (kernels/wasm-builder.ts; wasm-lanes.ts has a polynomial exp, σ and tanh), which import the
 *    backend's heap and run: the GRU cell and its gradient (kernels/gru-cell.ts; ~15 + ~30 ops a
 *    step before, incl. a PadV2 per slice gradient), additive attention and its gradient
 * (kernels/additive-attention.ts; the
 *    K = 1 outer products, Square/Sub/Multiply passes and [B, S, 512] Adds per decoder step), seeded
 *    dropout (kernels/dropout.ts; tf.dropout drew its mask in JS, ≈ 11× slower), Adam's update
 *    (kernels/adam.ts, 13 passes → 1, bit for bit) and the weights' moving average
 *    (kernels/moving-average.ts, 3 → 1), the loss gradient (kernels/softmax-xent.ts) and
 *    the column sums of Sum (kernels/column-sum.ts, ≈ 5× the JS loop). Each kernel's contract and
 *    its tfjs-ops fallback live beside the op (models/layers/gru.ts, attention.ts, dropout.ts,
 *    models/loss.ts, train/optim/adam.ts; the switch in models/layers/fused.ts), so other backends
 *    run the same model code. JS loops were no option: Math.exp costs 12-20 ns an element here.
 *  - The unfused graph, run in the same process on alternating batches, took 1.3-1.5× the CPU and
 *    wall time of a fused step (--ab unfused; learned and fixed-l2 heads).
 *    What is left: GEMM ≈ 70-75% of the step's CPU (MLAS at ≈ 45-50 GFLOP/s a CPU-second under
 *    this load), then engine/tape bookkeeping outside kernels (≈ 10%) and the loss's forward
 *    (XNNPACK Softmax + Max; a SIMD kernel of our own was no faster).
 *
 *  Threads (select.ts, wasm-threaded.ts): the threaded SIMD build works in Node and XNNPACK does
 *  use 2 threads: with both vCPUs free, a [1280,512]·[512,2000] GEMM loop ran 1.15 s → 0.61 s at
 *  1.97 CPU-seconds per second. But this VM is shared, and with any other process running the
 *  second thread only competes: in 6 paired runs, steps with 2 threads took from the same time
 *  to 50% longer than with 1 (e.g. 5.0 vs 4.0 s, 5.3 vs 4.2 s), and the pthreadpool worker
 *  spin-waits on a core between the ~7900 small kernel calls of a step. So 1 thread by default;
 *  FROST_WASM_THREADS=2 is worth trying on a dedicated machine. With native GEMM the big products
 *  no longer run in XNNPACK at all; the native runner's threads are FROST_NATIVE_GEMM_THREADS
 *  (default all cores).
 *
 * SYSTEM-BLAS PASS (issue #8, second session): the GEMMs go to the system's OpenBLAS through an FFI
 * call (kernels/gemm-blas.ts; MLAS stays the fallback): 1.0-2.0× MLAS per product (bench:gemm),
 * 465 → 307 ms of GEMM in a 720 → 489 ms step (bench/train-profile.ts, learned). Also the loss's
 * value from the saved probabilities (two [N, |V|] Max passes fewer) and FrostSumSquares for the
 * gradient norm (kernels/sum-squares.ts; Square + Sum before). frost/PyTorch 1.05-1.10 pooled
 * over six alternating rounds; what is left is the one-thread non-GEMM third of the step.
 *
 * TARGET-PACKING PASS (issue #8, fourth session): the decoders run each step only on the sentences
 * not yet finished, and the output layer only on real positions (models/packed-steps.ts); the
 * attention kernels here take queries for the first rows of the annotations. 17% of bench:train's
 * padded target positions were padding; frost/PyTorch 1.09-1.30 pooled since (README).
 */
import '@tensorflow/tfjs-backend-wasm';
import { getKernel, registerKernel, unregisterKernel, type KernelConfig, type KernelFunc } from '@tensorflow/tfjs-core';
import { BIAS_ADD_KERNEL } from '../../models/layers/bias-add.ts';
import { biasAddKernel } from './kernels/bias-add.ts';
import { makeBatchMatMul, makeFusedMatMul } from './kernels/batch-matmul.ts';
import { conv2dBackpropFilter } from './kernels/conv2d-backprop-filter.ts';
import { gemmConv2dBackpropInput } from './kernels/conv2d-backprop-input.ts';
import { ATTENTION_GRAD_KERNEL, ATTENTION_KERNEL } from '../../models/layers/attention.ts';
import { DROPOUT_KERNEL } from '../../models/layers/dropout.ts';
import { GRU_CELL_GRAD_KERNEL, GRU_CELL_KERNEL } from '../../models/layers/gru.ts';
import { additiveAttentionGradKernel, additiveAttentionKernel } from './kernels/additive-attention.ts';
import { dropoutKernel } from './kernels/dropout.ts';
import { adamKernel } from './kernels/adam.ts';
import { movingAverageKernel } from './kernels/moving-average.ts';
import { MOVING_AVERAGE_KERNEL } from '../optim/parameter-average.ts';
import { ADAM_KERNEL, SUM_SQUARES_KERNEL } from '../optim/adam.ts';
import { sumSquaresKernel } from './kernels/sum-squares.ts';
import { SOFTMAX_XENT_GRAD_KERNEL, SOFTMAX_XENT_KERNEL } from '../../models/loss.ts';
import { LAYER_NORM_GRAD_KERNEL, LAYER_NORM_KERNEL } from '../../models/layers/layer-norm.ts';
import { layerNormGradKernel, layerNormKernel } from './kernels/layer-norm.ts';
import { DYNAMIC_CONV_GRAD_KERNEL, DYNAMIC_CONV_KERNEL } from '../../models/layers/dynamic-conv.ts';
import { dynamicConvGradKernel, dynamicConvKernel } from './kernels/dynamic-conv.ts';
import { softmaxXentGradKernel, softmaxXentKernel } from './kernels/softmax-xent.ts';
import { sigmoidTanh } from './kernels/elementwise.ts';
import { rowGather } from './kernels/gather.ts';
import { gruCellGradKernel, gruCellKernel } from './kernels/gru-cell.ts';
import { typedOneHot } from './kernels/one-hot.ts';
import { aliasingIdentity } from './kernels/identity.ts';
import { heapSlice, heapSplitV, heapUnpack } from './kernels/slice.ts';
import { leadingAxesSum } from './kernels/sum.ts';
import { aliasingTranspose } from './kernels/transpose.ts';
import { unsortedSegmentSum } from './kernels/unsorted-segment-sum.ts';

const BACKEND = 'wasm';

interface Override {
  kernelName: string;
  /** Builds our kernel from the stock one (undefined when the backend has none). */
  make: (stock: KernelFunc | undefined) => KernelFunc;
}

function requireStock(name: string, stock: KernelFunc | undefined): KernelFunc {
  if (stock == null) throw new Error(`frost: the wasm backend has no stock '${name}' kernel to delegate to`);
  return stock;
}

const OVERRIDES: Override[] = [
  { kernelName: 'BatchMatMul', make: (stock) => makeBatchMatMul(requireStock('BatchMatMul', stock)) },
  {
    kernelName: '_FusedMatMul',
    make: (stock) =>
      makeFusedMatMul(
        requireStock('_FusedMatMul', stock),
        makeBatchMatMul(requireStock('BatchMatMul', stockWasmKernel('BatchMatMul'))),
      ),
  },
  { kernelName: 'Transpose', make: (stock) => aliasingTranspose(requireStock('Transpose', stock)) },
  { kernelName: 'UnsortedSegmentSum', make: () => unsortedSegmentSum },
  { kernelName: 'GatherV2', make: (stock) => rowGather(requireStock('GatherV2', stock)) },
  { kernelName: 'Identity', make: (stock) => aliasingIdentity(requireStock('Identity', stock)) },
  { kernelName: 'Slice', make: (stock) => heapSlice(requireStock('Slice', stock)) },
  { kernelName: 'SplitV', make: (stock) => heapSplitV(requireStock('SplitV', stock)) },
  { kernelName: 'Unpack', make: (stock) => heapUnpack(requireStock('Unpack', stock)) },
  { kernelName: 'Tanh', make: (stock) => sigmoidTanh(requireStock('Tanh', stock)) },
  { kernelName: 'Sum', make: (stock) => leadingAxesSum(requireStock('Sum', stock)) },
  { kernelName: 'OneHot', make: (stock) => typedOneHot(requireStock('OneHot', stock)) },
  { kernelName: GRU_CELL_KERNEL, make: () => gruCellKernel },
  { kernelName: GRU_CELL_GRAD_KERNEL, make: () => gruCellGradKernel },
  { kernelName: ATTENTION_KERNEL, make: () => additiveAttentionKernel },
  { kernelName: ATTENTION_GRAD_KERNEL, make: () => additiveAttentionGradKernel },
  { kernelName: DROPOUT_KERNEL, make: () => dropoutKernel },
  { kernelName: ADAM_KERNEL, make: () => adamKernel },
  { kernelName: SUM_SQUARES_KERNEL, make: () => sumSquaresKernel },
  { kernelName: MOVING_AVERAGE_KERNEL, make: () => movingAverageKernel },
  { kernelName: SOFTMAX_XENT_KERNEL, make: () => softmaxXentKernel },
  { kernelName: BIAS_ADD_KERNEL, make: () => biasAddKernel },
  { kernelName: LAYER_NORM_KERNEL, make: () => layerNormKernel },
  { kernelName: LAYER_NORM_GRAD_KERNEL, make: () => layerNormGradKernel },
  { kernelName: DYNAMIC_CONV_KERNEL, make: () => dynamicConvKernel },
  { kernelName: DYNAMIC_CONV_GRAD_KERNEL, make: () => dynamicConvGradKernel },
  { kernelName: SOFTMAX_XENT_GRAD_KERNEL, make: () => softmaxXentGradKernel },
  { kernelName: 'Conv2DBackpropFilter', make: () => conv2dBackpropFilter },
  {
    kernelName: 'Conv2DBackpropInput',
    make: (stock) => gemmConv2dBackpropInput(requireStock('Conv2DBackpropInput', stock)),
  },
];

/** The configs registered before ours (undefined: none was), kept to delegate to and to restore. */
const stockConfigs = new Map<string, KernelConfig | undefined>();
const ourKernels = new WeakSet<KernelFunc>();

/** Registers frost's wasm kernels (idempotent). Works before or after the wasm backend is initialised. */
export function registerWasmKernels(): void {
  for (const { kernelName, make } of OVERRIDES) {
    const current = getKernel(kernelName, BACKEND);
    if (current != null && ourKernels.has(current.kernelFunc)) continue;
    if (!stockConfigs.has(kernelName)) stockConfigs.set(kernelName, current);
    const stock = stockConfigs.get(kernelName);
    const kernelFunc = make(stock?.kernelFunc);
    ourKernels.add(kernelFunc);
    if (current != null) unregisterKernel(kernelName, BACKEND);
    // The stock setupFunc (it cwraps the C++ entry point) must still run when a backend instance
    // is created after this registration; the engine only calls the registered config's.
    registerKernel({
      kernelName,
      backendName: BACKEND,
      kernelFunc,
      setupFunc: stock?.setupFunc,
      disposeFunc: stock?.disposeFunc,
    });
  }
}

/** Puts the stock kernels back (benchmarks and tests compare against them). */
export function unregisterWasmKernels(): void {
  for (const { kernelName } of OVERRIDES) {
    const current = getKernel(kernelName, BACKEND);
    if (current == null || !ourKernels.has(current.kernelFunc)) continue;
    unregisterKernel(kernelName, BACKEND);
    const stock = stockConfigs.get(kernelName);
    if (stock != null) registerKernel(stock);
  }
}

/** The stock kernel function that registerWasmKernels replaced (undefined if none existed). */
export function stockWasmKernel(kernelName: string): KernelFunc | undefined {
  if (stockConfigs.has(kernelName)) return stockConfigs.get(kernelName)?.kernelFunc;
  const current = getKernel(kernelName, BACKEND);
  return current != null && !ourKernels.has(current.kernelFunc) ? current.kernelFunc : undefined;
}

/** Names of the kernels frost overrides or adds on wasm. */
export const WASM_KERNEL_OVERRIDES: readonly string[] = OVERRIDES.map((o) => o.kernelName);
