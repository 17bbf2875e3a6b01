/**
 * Where an exported model's bytes go, for the model card and `frost inspect`: initializer payload
 * bytes per component (embeddings, encoder, decoder, head, other), per scope (`decoder/gru`) and
 * per element type, plus how long onnxruntime-node takes to create a session for each graph.
 * Computed from the serialized graphs, so it describes exactly what was written, after any
 * precision conversion.
 */
import { readGraphInfo } from './inspect-graph.ts';
import { weightNameOf } from './precision.ts';
import { createNodeSession } from '../core/runtime/ort-node.ts';

/** Components in display order. */
export const COMPONENTS = ['embeddings', 'encoder', 'decoder', 'head', 'other'] as const;
export type Component = (typeof COMPONENTS)[number];

/** What {@link sizeReport} returns; the card's optional `size` field. */
export interface SizeReport {
  /** Initializer payload bytes per component, all graphs together. */
  components: Record<string, number>;
  /** The same per graph file. */
  byFile: Record<string, Record<string, number>>;
  /** Initializer payload bytes per scope (see {@link scopeOf}). */
  scopes: Record<string, number>;
  /** Initializer payload bytes per element type ('float32', 'float16', 'int8', ...). */
  dtypes: Record<string, number>;
  /** Median milliseconds of {@link SESSION_TIMING_RUNS} onnxruntime-node session creations, per graph file. */
  sessionCreateMs?: Record<string, number>;
}

/** Session creations timed per graph: the median of 3 hides one slow (cold-cache, busy-CPU) run. */
const SESSION_TIMING_RUNS = 3;

/**
 * The component an initializer belongs to, from frost's naming (`encoder/...`, `decoder/...`,
 * `head/...` or `.../head/...`, `.../embedding`). Tensors stored by the precision pass count for
 * the weight they replace. The tied embedding is stored once, in the decoder, and counts as an
 * embedding even though the head reads it too.
 */
export function componentOf(initializer: string): Component {
  const parts = weightNameOf(initializer).split('/');
  if (parts.length < 2) return 'other';
  if (parts[0] === 'head' || parts.slice(1, -1).includes('head')) return 'head';
  if (parts[parts.length - 1] === 'embedding') return 'embeddings';
  if (parts[0] === 'encoder') return 'encoder';
  if (parts[0] === 'decoder') return 'decoder';
  return 'other';
}

/**
 * The scope a weight lives in: its name without the last segment (`decoder/gru/W.int8` →
 * `decoder/gru`), except that an embedding table is its own scope (`encoder/embedding`), and
 * top-level constants are '(constants)'.
 */
export function scopeOf(initializer: string): string {
  const parts = weightNameOf(initializer).split('/');
  if (parts.length < 2) return '(constants)';
  return parts[parts.length - 1] === 'embedding' ? parts.join('/') : parts.slice(0, -1).join('/');
}

function add(into: Record<string, number>, key: string, n: number): void {
  into[key] = (into[key] ?? 0) + n;
}

/** Byte breakdown of the given graph files (name → bytes); no timing. */
export function sizeReport(files: Record<string, Uint8Array>): SizeReport {
  const report: SizeReport = { components: {}, byFile: {}, scopes: {}, dtypes: {} };
  for (const c of COMPONENTS) report.components[c] = 0;
  for (const [file, bytes] of Object.entries(files)) {
    const perFile: Record<string, number> = {};
    for (const c of COMPONENTS) perFile[c] = 0;
    for (const t of readGraphInfo(bytes).initializers) {
      const component = componentOf(t.name);
      add(perFile, component, t.bytes);
      add(report.components, component, t.bytes);
      add(report.scopes, scopeOf(t.name), t.bytes);
      add(report.dtypes, t.elemType, t.bytes);
    }
    report.byFile[file] = perFile;
  }
  return report;
}

/**
 * Median wall time of creating (and releasing) an onnxruntime-node CPU session for `bytes`, with the
 * options `loadModelDir` uses (all graph optimisations), so it is what serving a model costs at start.
 */
export async function medianSessionCreateMs(bytes: Uint8Array, runs = SESSION_TIMING_RUNS): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    const session = await createNodeSession(bytes);
    times.push(performance.now() - start);
    await session.release();
  }
  times.sort((a, b) => a - b);
  return Math.round(times[Math.floor(times.length / 2)]! * 100) / 100;
}

/** {@link sizeReport} plus session-creation timing of every file. */
export async function measureSizeReport(files: Record<string, Uint8Array>): Promise<SizeReport> {
  const report = sizeReport(files);
  report.sessionCreateMs = {};
  for (const [file, bytes] of Object.entries(files)) report.sessionCreateMs[file] = await medianSessionCreateMs(bytes);
  return report;
}
