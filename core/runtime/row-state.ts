/**
 * The decoder's rows as the runtime keeps them between steps: recurrent tensors per row, and the
 * encoder memory each row reads, gathered lazily when beam search reorders rows.
 */
import type { Tensor } from 'onnxruntime-common';
import type { BufferPool } from './buffer-pool.ts';
import type { Ort } from './seq2seq-types.ts';

/** A tensor on the CPU: what reorder gathers rows of. */
export type HostTensor = Tensor & { data: Exclude<Tensor['data'], string[]> };

/**
 * Per-row memory (encoder outputs, masks), gathered lazily. Beam search reorders rows every step,
 * but within one input all beams share the same memory row, so we track which encoder row each
 * live row reads (`rows`) and only materialise a gathered copy when that mapping changes: after
 * the beam expansion and whenever finished inputs are dropped, not on every step.
 * With `grouped` (the card's `graphs.decoder.groupedMemory`) the step graph reads one memory row per group of
 * consecutive rows that read the same encoder row, so beams share their source's row instead of copies of it.
 */
export class MemoryStore {
  private cachedRows: Int32Array | null = null;
  private cached: Record<string, HostTensor> | null = null;

  constructor(
    private readonly ort: Ort,
    readonly base: Readonly<Record<string, HostTensor>>,
    private readonly grouped = false,
  ) {}

  /**
   * The memory tensors for step rows that read encoder rows `rows`: row i is encoder row `rows[i]`, or when
   * grouped and the rows form equal groups ({@link memoryGroups}), row j is the encoder row of group j.
   */
  materialise(rows: Int32Array): Record<string, HostTensor> {
    if (this.cached && this.cachedRows && sameRows(this.cachedRows, rows)) return this.cached;
    const read = (this.grouped && memoryGroups(rows)) || rows;
    const identity = read.length === firstDim(this.base) && isIdentity(read);
    const out: Record<string, HostTensor> = {};
    for (const [name, t] of Object.entries(this.base)) out[name] = identity ? t : gatherRows(this.ort, t, read);
    this.cachedRows = rows;
    this.cached = out;
    return out;
  }
}

/**
 * The encoder row of each group when `rows` is equal groups of consecutive rows that read the same encoder row
 * (beam search's k beams per input; groups of one in greedy search), the groups as long as the first run;
 * otherwise null. The step graph groups by position alone: row i reads memory row ⌊i / group size⌋.
 */
export function memoryGroups(rows: Int32Array): Int32Array | null {
  let size = 1;
  while (size < rows.length && rows[size] === rows[0]) size++;
  if (rows.length % size !== 0) return null;
  const groups = new Int32Array(rows.length / size);
  for (let j = 0; j < groups.length; j++) {
    const at = j * size;
    for (let i = at; i < at + size; i++) if (rows[i] !== rows[at]) return null;
    groups[j] = rows[at];
  }
  return groups;
}

/** What {@link Seq2SeqRuntime.stepModel} steps: the decoder's recurrent tensors and a view of its memory. */
export interface DecoderState {
  /** Live rows. */
  readonly rows: number;
  /** Recurrent inputs by decoder input name (the card's `graphs.decoder.state`). */
  readonly state: Readonly<Record<string, HostTensor>>;
  /** For each live row, the encoder row whose memory it reads. */
  readonly memoryRows: Int32Array;
  readonly memory: MemoryStore;
  /** Positions filled in the state's append caches (the card's `graphs.decoder.cache`); 0 without them. */
  readonly cacheLength?: number;
}

/** Checks that an output is a CPU tensor with `rows` rows (reorder reads its data). */
export function hostTensor(t: Tensor | undefined, what: string, rows: number): HostTensor {
  if (!t) throw new Error(`${what} is missing from the run's outputs`);
  if (t.location !== 'cpu' && t.location !== 'cpu-pinned') {
    throw new Error(
      `${what} is on '${t.location}', but the runtime needs CPU tensors (leave preferredOutputLocation unset)`,
    );
  }
  if (t.type === 'string') throw new Error(`${what} is a string tensor; expected numbers`);
  if (t.dims[0] !== rows)
    throw new Error(`${what} has ${t.dims[0]} rows (dims [${t.dims.join(',')}]), expected ${rows}`);
  return t as HostTensor;
}

/** Rows of `t` along axis 0: new row i = old row order[i]; a float32 result's buffer comes from `pool` when given. */
export function gatherRows(ort: Ort, t: HostTensor, order: Int32Array, pool?: BufferPool): HostTensor {
  const rowSize = t.dims.length === 0 ? 1 : t.size / t.dims[0];
  const src = t.data;
  const Ctor = src.constructor as new (n: number) => typeof src;
  const n = order.length * rowSize;
  const out = pool && src instanceof Float32Array ? pool.take(n, true) : new Ctor(n);
  for (let i = 0; i < order.length; i++) {
    const from = order[i] * rowSize;
    // subarray + set is a memcpy for every typed array type, much faster than an element loop.
    (out as Float32Array).set((src as Float32Array).subarray(from, from + rowSize), i * rowSize);
  }
  return new ort.Tensor(t.type as 'float32', out as Float32Array, [order.length, ...t.dims.slice(1)]) as HostTensor;
}

/**
 * {@link gatherRows} into `t`'s own buffer, for a tensor nothing else reads any more (a decoder
 * step's output that is being reordered for the next step): no new buffer, and rows that keep
 * their place (`order[i] === i`) are not copied. Beam search mostly keeps a beam on its own row,
 * and a Transformer's row is its whole key/value cache, so this is most of the copying.
 * Each moved row is copied once ({@link planRowMoves}; pass `moves` when reordering several tensors by one order).
 * With `filled`, only each row's filled positions
 * are copied (an append cache's: the rest of a moved row keeps stale values the graph masks). Returns a tensor over
 * `t`'s buffer (its first `order.length` rows); `t` itself must not be used afterwards.
 * @throws RangeError when `order` has more rows than `t` (growing needs {@link gatherRows})
 */
export function reorderRowsInPlace(
  ort: Ort,
  t: HostTensor,
  order: Int32Array,
  filled?: FilledSpan,
  moves: Int32Array = planRowMoves(order),
): HostTensor {
  const rows = t.dims.length === 0 ? 1 : t.dims[0];
  const n = order.length;
  if (n > rows) throw new RangeError(`reorderRowsInPlace: ${n} rows from ${rows}`);
  const rowSize = rows === 0 ? 0 : t.size / rows;
  const data = t.data as Float32Array; // any typed array: copyWithin and set work on every type
  // Within a row: `blocks` runs of `run` values, `stride` apart (one run per head of a cache filled to `length`).
  const { blocks, run, stride } = filled ? filledRuns(t.dims, filled) : { blocks: 1, run: rowSize, stride: rowSize };
  let saved: Float32Array | null = null;
  for (let p = 0; p < moves.length; p += 2) {
    const to = moves[p]!;
    const from = moves[p + 1]!;
    if (to === SAVED) {
      saved ??= new (data.constructor as new (n: number) => Float32Array)(blocks * run);
      for (let b = 0; b < blocks; b++)
        saved.set(data.subarray(from * rowSize + b * stride, from * rowSize + b * stride + run), b * run);
    } else if (from === SAVED) {
      for (let b = 0; b < blocks; b++) data.set(saved!.subarray(b * run, (b + 1) * run), to * rowSize + b * stride);
    } else {
      // copyWithin is a memmove inside the buffer that makes no view object: most of a beam step's copying.
      for (let b = 0; b < blocks; b++)
        data.copyWithin(to * rowSize + b * stride, from * rowSize + b * stride, from * rowSize + b * stride + run);
    }
  }
  const out = n === rows ? data : data.subarray(0, n * rowSize);
  return new ort.Tensor(t.type as 'float32', out, [n, ...t.dims.slice(1)]) as HostTensor;
}

/** In {@link planRowMoves}' pairs: as `to`, set row `from` aside; as `from`, read the row set aside. */
const SAVED = -1;

/**
 * The row copies that reorder rows in place to `order` (new row i = old row order[i]), as (to, from) pairs in the
 * order they run. Each moved row is copied once: a slot is written only after every row that reads its old value
 * has been, and a cycle of moves (beams trading places) sets one row aside. It depends on the order alone, so a
 * reorder of several tensors plans once and passes the plan to each {@link reorderRowsInPlace}.
 */
export function planRowMoves(order: Int32Array): Int32Array {
  const n = order.length;
  // At most one copy per moved row, plus one pair per cycle (cycles have two rows or more).
  const pairs = new Int32Array(3 * n + 2);
  let at = 0;
  const push = (to: number, from: number) => {
    pairs[at++] = to;
    pairs[at++] = from;
  };
  // readers[j]: moved rows, not yet written, that read slot j's old value; slot j is written once none is left.
  const readers = new Int32Array(n);
  for (let i = 0; i < n; i++) if (order[i] !== i && order[i]! < n) readers[order[i]!]++;
  const done = new Uint8Array(n);
  const ready = new Int32Array(n);
  let top = 0;
  for (let i = 0; i < n; i++) if (order[i] !== i && readers[i] === 0) ready[top++] = i;
  while (top > 0) {
    const i = ready[--top]!;
    const j = order[i]!;
    push(i, j);
    done[i] = 1;
    if (j < n && order[j] !== j && --readers[j] === 0) ready[top++] = j;
  }
  // What is left are cycles: each slot is read by exactly the next one. Set one row aside, shift, put it back.
  for (let i = 0; i < n; i++) {
    if (order[i] === i || done[i]) continue;
    push(SAVED, i);
    let slot = i;
    for (let from = order[slot]!; from !== i; slot = from, from = order[slot]!) {
      push(slot, from);
      done[slot] = 1;
    }
    push(slot, SAVED);
    done[slot] = 1;
  }
  return pairs.subarray(0, at);
}

/**
 * The part of each row that holds data: positions [0, length) along `axis` (an append cache's filled positions; the
 * rest is spare capacity, masked by the graph, that a reorder need not copy).
 */
export interface FilledSpan {
  axis: number;
  length: number;
}

function filledRuns(dims: readonly number[], { axis, length }: FilledSpan) {
  if (axis < 1 || axis >= dims.length || length > dims[axis]!)
    throw new RangeError(`reorderRowsInPlace: ${length} filled positions on axis ${axis} of [${dims.join(',')}]`);
  const inner = dims.slice(axis + 1).reduce((a, b) => a * b, 1);
  return { blocks: dims.slice(1, axis).reduce((a, b) => a * b, 1), run: length * inner, stride: dims[axis]! * inner };
}

/** Runs this short are copied by a loop: a subarray per call costs more than the copy (and feeds the GC). */
const SHORT_SPAN = 128;

/** Copies `n` values from `src` at `srcAt` to `dst` at `dstAt`; the two ranges must not overlap. */
export function copySpan(dst: Float32Array, dstAt: number, src: Float32Array, srcAt: number, n: number): void {
  if (n > SHORT_SPAN) dst.set(src.subarray(srcAt, srcAt + n), dstAt);
  else for (let k = 0; k < n; k++) dst[dstAt + k] = src[srcAt + k]!;
}

function firstDim(named: Readonly<Record<string, HostTensor>>): number {
  for (const t of Object.values(named)) return t.dims[0];
  return 0;
}

export function iota(n: number): Int32Array {
  const a = new Int32Array(n);
  for (let i = 0; i < n; i++) a[i] = i;
  return a;
}

export function isIdentity(order: Int32Array): boolean {
  for (let i = 0; i < order.length; i++) if (order[i] !== i) return false;
  return true;
}

function sameRows(a: Int32Array, b: Int32Array): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
