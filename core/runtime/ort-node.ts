/**
 * onnxruntime-node, in one place: the sessions frost creates (serving, export checks, frozen image
 * encoders, benchmarks), all with one set of options, and the module itself for what they leave to
 * the caller (tensors, `env`, handing it to the isomorphic runtimes). Nothing else imports
 * onnxruntime-node (test/import-graph.test.ts); the browser's onnxruntime-web is ort-web.ts's.
 *
 * Importing this module loads onnxruntime's native binding (the package loads it when imported).
 */
import { createRequire } from 'node:module';
import * as ort from 'onnxruntime-node';
import { constantsGraph, materialiseWith } from '../onnx/materialise-constants.ts';

/**
 * onnxruntime-node's API (`Tensor`, `InferenceSession`, `env`): the `ort` the isomorphic runtimes
 * take (`Seq2SeqRuntime.create({ ort, ... })`). Sessions come from {@link createNodeSession}.
 */
export { ort };
export { Tensor } from 'onnxruntime-node';

/** What a caller may choose per session; everything else is {@link NODE_SESSION_OPTIONS}. */
export interface NodeSessionOptions {
  /** Threads ORT uses inside one operator; 0 lets ORT pick (one per core). @default 0 */
  intraOpNumThreads?: number;
  /** @default ['cpu'] */
  executionProviders?: string[];
  /**
   * Write onnxruntime's per-node profile to `<prefix>_<time>.json` when the session ends profiling
   * (`session.endProfiling()`); for bench/decode-step-profile.ts.
   */
  profileFilePrefix?: string;
}

/**
 * The options every session gets: all graph optimisations (ORT's own default, stated so that a
 * change of that default does not change frost's numbers).
 */
export const NODE_SESSION_OPTIONS: Readonly<ort.InferenceSession.SessionOptions> = { graphOptimizationLevel: 'all' };

/**
 * Creates a session for a graph's bytes or file path. Values a graph computes from its initializers
 * alone (a seeded head's regenerated matrix) are computed first by running just that part, and the
 * session is opened from the graph holding them as initializers ({@link withFoldedConstants}).
 */
export async function createNodeSession(
  model: Uint8Array | string,
  opts: NodeSessionOptions = {},
): Promise<ort.InferenceSession> {
  const { profileFilePrefix, ...rest } = opts;
  const options: ort.InferenceSession.SessionOptions = {
    ...NODE_SESSION_OPTIONS,
    ...rest,
    ...(profileFilePrefix !== undefined && { enableProfiling: true, profileFilePrefix }),
  };
  return typeof model === 'string'
    ? ort.InferenceSession.create(model, options)
    : ort.InferenceSession.create(await withFoldedConstants(model), options);
}

/**
 * `bytes` with its initializer-only values computed once and stored as initializers; `bytes` itself
 * when there are none or the graph cannot be split (then onnxruntime folds or reports it as before).
 *
 * Why: onnxruntime's own constant folding of a `fixed-l2` head's generator took ~2 s at every session
 * creation (7,800 × 512), against ~0.1 s for running the same nodes as a graph; the result is the
 * same bit for bit (test/materialise-constants.test.ts). The file on disk stays the small graph.
 */
export async function withFoldedConstants(bytes: Uint8Array): Promise<Uint8Array> {
  let split: ReturnType<typeof constantsGraph>;
  try {
    split = constantsGraph(bytes);
  } catch {
    return bytes; // not a decodable model: let onnxruntime report it with its own message
  }
  if (!split) return bytes;
  // Optimisations off: with them on, onnxruntime would fold the whole graph at creation, the slow path this avoids.
  return materialiseWith(ort, bytes, split, { graphOptimizationLevel: 'disabled', intraOpNumThreads: 1 });
}

/**
 * The execution providers this onnxruntime-node build lists (`cpu`, and `cuda` where the build has
 * it), or undefined when it cannot say. A listed provider may still lack its libraries: only creating
 * a session on it proves it works.
 */
export function listedExecutionProviders(): string[] | undefined {
  return ort.listSupportedBackends?.().map((b) => b.name);
}

/** A session of onnxruntime-node's N-API binding: synchronous, unlike the package's own API. */
export interface NativeSession {
  loadModel(buffer: ArrayBufferLike, byteOffset: number, byteLength: number, options: Record<string, unknown>): void;
  run(
    feeds: Record<string, unknown>,
    fetches: Record<string, unknown>,
    options: Record<string, unknown>,
  ): Record<string, unknown>;
  dispose(): void;
}

/** onnxruntime-node's `dist/binding`: not the package's public API, so only its part frost uses. */
interface BindingModule {
  binding: { InferenceSession: new () => NativeSession };
  initOrt(): void;
}

/**
 * onnxruntime-node's native session class (the "simple synchronized inference session object wrap"
 * its async API sits on), with ORT initialised, and the package's version. For
 * train/backend/kernels/gemm-mlas.ts, whose GEMMs run inside a tfjs kernel and so must be
 * synchronous. Its sessions take the caller's options, not {@link NODE_SESSION_OPTIONS}: they run
 * one Gemm node each, with ORT's thread pool set up for that.
 * @throws Error when ORT cannot be initialised
 */
export function nativeSessionBinding(): { NativeSession: new () => NativeSession; version: string } {
  const require = createRequire(import.meta.url);
  const { binding, initOrt } = require('onnxruntime-node/dist/binding') as BindingModule;
  const version = (require('onnxruntime-node/package.json') as { version: string }).version;
  initOrt();
  return { NativeSession: binding.InferenceSession, version };
}

/**
 * The onnxruntime-node version these sessions run on, for what a report says it measured with; undefined when
 * the binding does not say.
 */
export function nodeRuntimeVersion(): string | undefined {
  return ort.env.versions.node;
}
