/**
 * Warm loads of seeded heads (fixed-l2, hadamard...) as fast as of stored ones: the values such a
 * graph computes from its initializers alone (the regenerated matrix) are computed once, with
 * onnxruntime-web, and the graph holding them as initializers is kept in Cache Storage under the
 * graph's URL and the model's version. The download stays the small graph; later loads open the
 * cached one and skip the regeneration that onnxruntime would otherwise fold at every session
 * creation (core/onnx/materialise-constants.ts).
 */
import { constantsGraph, materialiseWith } from '../../../core/onnx/materialise-constants.ts';
import type { Ort } from '../../../core/runtime/seq2seq-types.ts';
import { readDerived, storeDerived } from './file-cache.ts';

const derivedKey = (url: string) => `${url}?frost-materialised`;

/**
 * The materialised graph of `url` at `version` when an earlier load stored it, else null. Read before the
 * small graph is fetched: with it at hand the small graph is not needed at all, so a warm load reads as many
 * bytes from Cache Storage as a stored head's does, not the small graph and the big one.
 */
export function cachedMaterialisedGraph(url: string, version: string): Promise<Uint8Array | null> {
  return readDerived(derivedKey(url), version);
}

/** The graph to open a session from, and whether it came ready from the cache. */
export async function materialisedGraph(
  ort: Ort,
  bytes: Uint8Array,
  url: string,
  version: string,
): Promise<{ bytes: Uint8Array; fromCache: boolean }> {
  const key = derivedKey(url);
  const cached = await readDerived(key, version);
  if (cached) return { bytes: cached, fromCache: true };
  const split = constantsGraph(bytes);
  if (!split) return { bytes, fromCache: false };
  // The wasm provider computes exactly what session creation would have folded (tested bit for bit).
  const materialised = await materialiseWith(ort, bytes, split, { executionProviders: ['wasm'] });
  await storeDerived(key, version, materialised);
  return { bytes: materialised, fromCache: false };
}
