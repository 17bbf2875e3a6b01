/**
 * GEMMs by onnxruntime-node's MLAS (native x86-64/ARM64 code: AVX2/AVX-512 FMA kernels and its own
 * thread pool), in place on the wasm heap. ORT is already a frost dependency (export parity,
 * serving), so this provider loads wherever ORT does. Which provider runs a product is measured per
 * shape class (gemm-probe.ts).
 *
 * How: one tiny ONNX graph per transpose combination, a single Gemm with symbolic dims (transA/transB
 * attributes, so neither operand is copied to transpose it), run synchronously, as a tfjs kernel must,
 * through one of two doors into the same library:
 *  - onnxruntime's C API (ort-c-api.ts, through koffi): inputs and output are OrtValues over the wasm
 *    heap, so MLAS reads the operands and writes the result in place. The default.
 *  - the package's N-API binding (core/runtime/ort-node.ts hands it out), where koffi does not load: it
 *    reads pre-allocated outputs in place too, but hands each output back as a new JS buffer, a copy
 *    the size of the result that, with the page faults of a fresh buffer, took longer than the product itself on
 *    a Transformer step's logits (105.8 against 45.6 ms through the C API, npm run bench:gemm). The threaded
 *    wasm build's heap is a SharedArrayBuffer, which the binding refuses: there the operands and the result are
 *    copied through plain buffers.
 *
 * ORT's pool is created with spinning off, so its threads sleep between kernels instead of burning
 * a core while the wasm side runs the step's small kernels.
 */
import { GraphBuilder } from '../../../core/onnx/graph-builder.ts';
import { nativeSessionBinding, Tensor, type NativeSession } from '../../../core/runtime/ort-node.ts';
import { gemmThreads, selfCheck, type BatchedGemm, type GemmProvider, type NativeGemm } from './native-gemm.ts';
import { loadOrtCApi, type OrtCSession } from './ort-c-api.ts';

/** Which door into ORT runs the products. */
export type MlasDoor = 'c-api' | 'binding';

function gemmModel(tA: boolean, tB: boolean): Uint8Array {
  const g = new GraphBuilder(`frost-gemm-${tA ? 't' : 'n'}${tB ? 't' : 'n'}`, { opset: 13 });
  const a = g.input('a', 'float32', tA ? ['k', 'm'] : ['m', 'k']);
  const b = g.input('b', 'float32', tB ? ['n', 'k'] : ['k', 'n']);
  g.output(g.op('Gemm', [a, b], { transA: tA ? 1 : 0, transB: tB ? 1 : 0 }), 'y', 'float32', ['m', 'n']);
  return g.toBytes();
}

/**
 * Batched products as one node: onnxruntime's FusedMatMul (com.microsoft), which takes the transposes of each entry
 * as attributes and runs MLAS's batched GEMM over the entries, threaded.
 */
function batchedGemmModel(tA: boolean, tB: boolean): Uint8Array {
  const g = new GraphBuilder(`frost-batched-gemm-${tA ? 't' : 'n'}${tB ? 't' : 'n'}`, {
    opset: 13,
    domains: { 'com.microsoft': 1 },
  });
  const a = g.input('a', 'float32', tA ? ['batch', 'k', 'm'] : ['batch', 'm', 'k']);
  const b = g.input('b', 'float32', tB ? ['batch', 'n', 'k'] : ['batch', 'k', 'n']);
  const y = g.op(
    'FusedMatMul',
    [a, b],
    { transA: tA ? 1 : 0, transB: tB ? 1 : 0, alpha: 1 },
    { domain: 'com.microsoft' },
  );
  g.output(y, 'y', 'float32', ['batch', 'm', 'n']);
  return g.toBytes();
}

/** One session per transpose combination, made on first use. */
function sessionsByTranspose<S>(
  model: (tA: boolean, tB: boolean) => Uint8Array,
  make: (model: Uint8Array) => S,
): { get(tA: boolean, tB: boolean): S; all(): S[] } {
  const sessions = new Map<number, S>();
  return {
    get(tA, tB) {
      const key = (tA ? 2 : 0) + (tB ? 1 : 0);
      let s = sessions.get(key);
      if (s == null) {
        s = make(model(tA, tB));
        sessions.set(key, s);
      }
      return s;
    },
    all: () => [...sessions.values()],
  };
}

type GemmCall = NativeGemm['gemm'];

/** One door's runner: what loadMlasGemm wraps as the provider. */
interface Door {
  version: string;
  /** How the products get to MLAS, for the description. */
  how: string;
  /**
   * Below this many multiply-adds a call's fixed cost outweighs MLAS's speed-up. Through the C API the probe's
   * smallest bucket (products under 2^18) goes to OpenBLAS, MLAS taking 2-3× its time there (the probe's times
   * in `npm run bench:train`'s results.json); the
   * binding keeps the bound it was given when its calls cost 50-60 µs, as it also copies each result back.
   */
  minMacs: number;
  gemm: GemmCall;
  batched?: BatchedGemm;
  dispose(): void;
}

/** The products through ORT's C API, over the caller's memory; an Error when the C API does not load. */
function cApiGemm(threads: number): Door | Error {
  const api = loadOrtCApi();
  if (api instanceof Error) return api;
  const open = (model: Uint8Array) => api.session(model, ['a', 'b'], ['y'], threads);
  const sessions = sessionsByTranspose<OrtCSession>(gemmModel, open);
  const batchedSessions = sessionsByTranspose<OrtCSession>(batchedGemmModel, open);
  return {
    version: api.version,
    how: 'C API',
    minMacs: 2 ** 17,
    gemm(A, B, Y, M, K, N, tA, tB) {
      sessions.get(tA, tB).run(
        [
          [A, tA ? [K, M] : [M, K]],
          [B, tB ? [N, K] : [K, N]],
        ],
        [[Y, [M, N]]],
      );
    },
    batched: {
      // One call for every entry: its fixed cost is about what the stock loop takes for this many.
      minMacs: 2 ** 14,
      gemm(A, B, Y, batch, M, K, N, tA, tB) {
        batchedSessions.get(tA, tB).run(
          [
            [A, tA ? [batch, K, M] : [batch, M, K]],
            [B, tB ? [batch, N, K] : [batch, K, N]],
          ],
          [[Y, [batch, M, N]]],
        );
      },
    },
    dispose() {
      for (const s of [...sessions.all(), ...batchedSessions.all()]) s.dispose();
    },
  };
}

/**
 * The products through onnxruntime-node's N-API binding (each output copied back once more, and dropped);
 * `whyNotCApi`: what kept the C API from loading, for the description.
 */
function bindingGemm(threads: number, whyNotCApi?: string): Door {
  const { NativeSession, version } = nativeSessionBinding();
  const options = {
    intraOpNumThreads: threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    extra: { session: { intra_op: { allow_spinning: '0' }, inter_op: { allow_spinning: '0' } } },
  };
  const sessions = sessionsByTranspose<NativeSession>(gemmModel, (model) => {
    const s = new NativeSession();
    s.loadModel(model.buffer, model.byteOffset, model.byteLength, options);
    return s;
  });
  const runOptions = {};
  return {
    version,
    how: `N-API binding, outputs copied${whyNotCApi ? `; no C API: ${whyNotCApi.split('\n')[0]}` : ''}`,
    minMacs: 2 ** 19,
    gemm(A, B, Y, M, K, N, tA, tB) {
      // The binding refuses views of a SharedArrayBuffer (the threaded wasm build's heap): copy.
      const shared = Y.buffer instanceof SharedArrayBuffer;
      const feeds = {
        a: new Tensor('float32', shared ? A.slice() : A, tA ? [K, M] : [M, K]),
        b: new Tensor('float32', shared ? B.slice() : B, tB ? [N, K] : [K, N]),
      };
      const y = shared ? new Float32Array(M * N) : Y;
      sessions.get(tA, tB).run(feeds, { y: new Tensor('float32', y, [M, N]) }, runOptions);
      if (shared) Y.set(y);
    },
    dispose() {
      for (const s of sessions.all()) s.dispose();
    },
  };
}

/**
 * MLAS through onnxruntime, by `door` (default: the C API where it loads, else the binding), or an Error saying why
 * not (package missing, a library that does not load on this platform, a session that fails a 2×2 check).
 */
export function loadMlasGemm(threads: number, door?: MlasDoor): NativeGemm | Error {
  try {
    const n = gemmThreads(threads);
    const viaCApi = door === 'binding' ? null : cApiGemm(n);
    if (door === 'c-api' && viaCApi instanceof Error) return viaCApi;
    const runner = viaCApi == null || viaCApi instanceof Error ? bindingGemm(n, viaCApi?.message) : viaCApi;
    const native: NativeGemm = {
      provider: 'mlas',
      threads: n,
      minMacs: runner.minMacs,
      // Batched entries that size run as fast in the stock loop.
      minEntryMacs: 2 ** 17,
      description: `onnxruntime-node ${runner.version} MLAS (${runner.how}), ${n} thread${n === 1 ? '' : 's'}`,
      gemm: runner.gemm,
      ...(runner.batched != null ? { batched: runner.batched } : {}),
      dispose: runner.dispose,
    };
    selfCheck(native.gemm);
    return native;
  } catch (e) {
    return e instanceof Error ? e : new Error(String(e));
  }
}

export const mlasProvider: GemmProvider = { name: 'mlas', load: (threads) => loadMlasGemm(threads) };
