/**
 * Float32 buffers a runtime hands back when it drops them (an append cache that grew, a state that beam expansion
 * copied), kept for the next buffer of the same length. Decodes of one batch shape grow their caches to the same
 * lengths step after step, so after the first batch most growths take a kept buffer instead of a new one: a new
 * buffer of a megabyte costs its zero-fill and page faults, and the external memory it adds makes V8 collect
 * sooner (docs/decoding-speed.md).
 */
export class BufferPool {
  private readonly free = new Map<number, Float32Array[]>();
  private bytes = 0;

  /** @param maxBytes what the pool may keep in all; a buffer handed back past it is left to the GC */
  constructor(readonly maxBytes = 64 * 1024 * 1024) {}

  /**
   * A buffer of `length` values, a kept one when there is one: zero-filled, as `new Float32Array(length)` gives,
   * unless `overwritten` says the caller writes every value itself.
   */
  take(length: number, overwritten = false): Float32Array {
    const kept = this.free.get(length)?.pop();
    if (!kept) return new Float32Array(length);
    this.bytes -= kept.byteLength;
    return overwritten ? kept : kept.fill(0);
  }

  /**
   * Keeps `buffer` for a later {@link take}. The caller must not read or write it afterwards, and nothing else may
   * hold it: a view of part of a larger buffer (a `subarray`) is refused, as it is not the whole allocation.
   */
  give(buffer: Float32Array): void {
    if (buffer.byteOffset !== 0 || buffer.byteLength !== buffer.buffer.byteLength) return;
    if (buffer.length === 0 || this.bytes + buffer.byteLength > this.maxBytes) return;
    let list = this.free.get(buffer.length);
    if (!list) this.free.set(buffer.length, (list = []));
    list.push(buffer);
    this.bytes += buffer.byteLength;
  }

  /** Bytes kept now. */
  get keptBytes(): number {
    return this.bytes;
  }
}
