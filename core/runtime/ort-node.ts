/**
 * The one place frost creates onnxruntime-node sessions (serving, export checks, frozen image
 * encoders, benchmarks), so they all run graphs the same way. Node only; the browser creates its
 * onnxruntime-web sessions in clients/web.
 */
import * as ort from 'onnxruntime-node';

/** What a caller may choose per session; everything else is {@link NODE_SESSION_OPTIONS}. */
export interface NodeSessionOptions {
  /** Threads ORT uses inside one operator; 0 lets ORT pick (one per core). @default 0 */
  intraOpNumThreads?: number;
  /** @default ['cpu'] */
  executionProviders?: string[];
}

/**
 * The options every session gets: all graph optimisations (ORT's own default, stated so that a
 * change of that default does not change frost's numbers).
 */
export const NODE_SESSION_OPTIONS: Readonly<ort.InferenceSession.SessionOptions> = { graphOptimizationLevel: 'all' };

/** Creates a session for a graph's bytes or file path. */
export function createNodeSession(
  model: Uint8Array | string,
  opts: NodeSessionOptions = {},
): Promise<ort.InferenceSession> {
  const options: ort.InferenceSession.SessionOptions = { ...NODE_SESSION_OPTIONS, ...opts };
  return typeof model === 'string'
    ? ort.InferenceSession.create(model, options)
    : ort.InferenceSession.create(model, options);
}
