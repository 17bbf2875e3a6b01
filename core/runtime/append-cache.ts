/**
 * Key/value caches the runtime owns (the card's `graphs.decoder.cache` of kind `append`): buffers with
 * spare capacity along the position axis, into which each step's new position is written, so a step
 * copies one position per row instead of the whole cache (docs/decoding-speed.md, issue #41).
 */
import type { BufferPool } from './buffer-pool.ts';
import type { ModelCard } from './model-card.ts';
import { copySpan, type HostTensor } from './row-state.ts';
import type { Ort } from './seq2seq-types.ts';

export type AppendCacheSpec = NonNullable<ModelCard['graphs']['decoder']['cache']>;

/**
 * Positions a full buffer grows by. Small on purpose: the graph attends over the unfilled positions too (masked),
 * so spare capacity costs attention time, while growing copies the cache once per chunk.
 */
export const CACHE_CHUNK = 8;

/** The output a step graph returns for state `name`: its new position (append caches) or its next value. */
export function stateOutput(dec: ModelCard['graphs']['decoder'], name: string): string {
  return dec.cache?.states[name] ?? `next_${name}`;
}

/**
 * `cache` [..., capacity at `axis`, ...] with position `length` set to `fresh` [..., 1 at `axis`, ...]. Written into
 * `cache`'s own buffer when `inPlace` and it has room (nothing else may read `cache` then); otherwise into a new
 * buffer with {@link CACHE_CHUNK} more positions when `cache` is full, the same capacity when not. With a `pool`, the
 * new buffer comes from it, and when `inPlace` the buffer `cache` outgrew goes back to it.
 * @throws RangeError when `fresh` does not match `cache` outside the position axis
 */
export function appendPosition(
  ort: Ort,
  cache: HostTensor,
  length: number,
  fresh: HostTensor,
  axis: number,
  inPlace: boolean,
  pool?: BufferPool,
): HostTensor {
  const dims = cache.dims;
  const capacity = dims[axis]!;
  const outer = dims.slice(0, axis).reduce((a, b) => a * b, 1);
  const inner = dims.slice(axis + 1).reduce((a, b) => a * b, 1);
  if (fresh.size !== outer * inner || length > capacity)
    throw new RangeError(
      `appendPosition: new position dims [${fresh.dims.join(',')}] for a cache [${dims.join(',')}] filled to ${length}`,
    );
  const src = cache.data as Float32Array;
  const add = fresh.data as Float32Array;
  let data = src;
  let cap = capacity;
  if (!inPlace || length === capacity) {
    cap = length === capacity ? capacity + CACHE_CHUNK : capacity;
    data = pool?.take(outer * cap * inner) ?? new Float32Array(outer * cap * inner);
    const kept = length * inner;
    for (let o = 0; o < outer; o++) copySpan(data, o * cap * inner, src, o * capacity * inner, kept);
    if (inPlace) pool?.give(src);
  }
  for (let o = 0; o < outer; o++) copySpan(data, (o * cap + length) * inner, add, o * inner, inner);
  const out = data === src ? cache.data : data;
  const next = dims.slice();
  next[axis] = cap;
  return new ort.Tensor('float32', out as Float32Array, next) as HostTensor;
}
