/**
 * GEMMs by onnxruntime-node's MLAS (native x86-64/ARM64 code: AVX2/AVX-512 FMA kernels and its own
 * thread pool), in place on the wasm heap. ORT is already a frost dependency (export parity,
 * serving), so this provider always loads where ORT does; the system BLAS (gemm-blas.ts) is
 * preferred where there is one, being 1.0-2.0× faster on this model's shapes (npm run bench:gemm).
 *
 * How: the package's N-API binding (onnxruntime-node/dist/binding, the "simple synchronized
 * inference session object wrap" its own async API sits on; core/runtime/ort-node.ts hands it out)
 * runs a session synchronously, as a tfjs kernel must. One tiny ONNX graph per transpose
 * combination, a single Gemm with symbolic dims (transA/transB attributes, so neither operand is
 * copied to transpose it). Inputs are ORT tensors over Float32Array views of the wasm heap (ORT
 * reads them in place); the output is pre-allocated the same way, over the output tensor's block on
 * the heap, so MLAS writes the result where tfjs expects it. (The binding also hands back a JS copy
 * of the output, which is dropped: one memcpy of the result, ≈ 3% of the GEMM's time at the sizes
 * that come here.) The threaded wasm build's heap is a SharedArrayBuffer, which the binding refuses:
 * there the operands and the result are copied through plain buffers.
 *
 * ORT's pool is created with spinning off, so its threads sleep between kernels instead of burning
 * a core while the wasm side runs the step's small kernels.
 */
import { GraphBuilder } from '../../../core/onnx/graph-builder.ts';
import { nativeSessionBinding, Tensor, type NativeSession } from '../../../core/runtime/ort-node.ts';
import { gemmThreads, selfCheck, type GemmProvider, type NativeGemm } from './native-gemm.ts';

/** Below this many multiply-adds a call's fixed cost (≈ 50-60 µs) outweighs MLAS's speed-up. */
const MLAS_MIN_MACS = 2 ** 19;

function gemmModel(tA: boolean, tB: boolean): Uint8Array {
  const g = new GraphBuilder(`frost-gemm-${tA ? 't' : 'n'}${tB ? 't' : 'n'}`, { opset: 13 });
  const a = g.input('a', 'float32', tA ? ['k', 'm'] : ['m', 'k']);
  const b = g.input('b', 'float32', tB ? ['n', 'k'] : ['k', 'n']);
  g.output(g.op('Gemm', [a, b], { transA: tA ? 1 : 0, transB: tB ? 1 : 0 }), 'y', 'float32', ['m', 'n']);
  return g.toBytes();
}

/**
 * MLAS through onnxruntime-node, or an Error saying why not (package missing, binding that does
 * not load on this platform, a session that fails to run a 2×2 check).
 */
function loadMlasGemm(threads: number): NativeGemm | Error {
  try {
    const { NativeSession, version } = nativeSessionBinding();
    const n = gemmThreads(threads);
    const options = {
      intraOpNumThreads: n,
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
      extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
    };
    const sessions = new Map<number, NativeSession>();
    const session = (tA: boolean, tB: boolean): NativeSession => {
      const key = (tA ? 2 : 0) + (tB ? 1 : 0);
      let s = sessions.get(key);
      if (s == null) {
        const bytes = gemmModel(tA, tB);
        s = new NativeSession();
        s.loadModel(bytes.buffer, bytes.byteOffset, bytes.byteLength, options);
        sessions.set(key, s);
      }
      return s;
    };
    const runOptions = {};
    const native: NativeGemm = {
      provider: 'mlas',
      threads: n,
      minMacs: MLAS_MIN_MACS,
      // 50-60 µs a call: batched entries that size run as fast in the stock loop.
      minEntryMacs: 2 ** 17,
      description: `onnxruntime-node ${version} MLAS, ${n} thread${n === 1 ? '' : 's'}`,
      gemm(A, B, Y, M, K, N, tA, tB) {
        // The binding refuses views of a SharedArrayBuffer (the threaded wasm build's heap): copy.
        const shared = Y.buffer instanceof SharedArrayBuffer;
        const feeds = {
          a: new Tensor('float32', shared ? A.slice() : A, tA ? [K, M] : [M, K]),
          b: new Tensor('float32', shared ? B.slice() : B, tB ? [N, K] : [K, N]),
        };
        const y = shared ? new Float32Array(M * N) : Y;
        session(tA, tB).run(feeds, { y: new Tensor('float32', y, [M, N]) }, runOptions);
        if (shared) Y.set(y);
      },
      dispose() {
        for (const s of sessions.values()) s.dispose();
        sessions.clear();
      },
    };
    selfCheck(native.gemm);
    return native;
  } catch (e) {
    return e instanceof Error ? e : new Error(String(e));
  }
}

export const mlasProvider: GemmProvider = { name: 'mlas', load: loadMlasGemm };
