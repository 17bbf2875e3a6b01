import * as tf from '@tensorflow/tfjs-core';
import { z } from 'zod';
import { parseOptions } from '../../core/options.ts';
import { describeIssues } from '../../core/zod-issues.ts';
import { Registry } from '../../core/registry.ts';
import type { ParamStore } from '../params.ts';
import type { TargetMatrix } from './target-matrix.ts';
import { compactHead } from './compact-output.ts';
import { maskedHead } from './output-mask.ts';
import type { HeadContext, HeadDefinition, OutputHead } from './types.ts';

const heads = new Registry<HeadDefinition>('output head');

/** Adds a head under its name; each head file calls this once. */
export function registerHead<Options extends object>(def: HeadDefinition<Options>): void {
  heads.register(def.name, def as unknown as HeadDefinition);
}

export function headNames(): string[] {
  return heads.names();
}

export function getHeadDefinition(name: string): HeadDefinition {
  return heads.get(name);
}

/** Whether the head's target vectors are frozen; false for a name no head is registered under (an old report's). */
export function headIsFrozen(name: string): boolean {
  return heads.find(name)?.frozen ?? false;
}

/**
 * A head's options checked against its schema, defaults filled in.
 * @throws RangeError naming the allowed keys or the expected type (one line, for the CLI)
 */
export function resolveHeadOptions(name: string, options: Record<string, unknown> = {}): object {
  return parseOptions(getHeadDefinition(name).options, options, `head '${name}'`);
}

/**
 * The option every head takes besides its own: an imported model's output rows in its own order (train/import/
 * fairseq.ts). The head is built over `rows` rows, as the model it comes from built it (a frozen head then
 * regenerates the very matrix that model trained with, whose rows are that model's ids), and its logits are
 * gathered into frost's vocabulary order. `moved` gives frost's id of each source row that is not at its own id;
 * heads that score against the target embedding read the embedding's rows in the source order (ctx.rowIds).
 */
export const SOURCE_ROWS_OPTION = 'sourceRows';
export const sourceRowsSchema = z.strictObject({
  rows: z.number().int().positive(),
  moved: z.record(z.string().regex(/^\d+$/), z.number().int().nonnegative()),
});
export type SourceRows = z.infer<typeof sourceRowsSchema>;

/**
 * Builds a head by name; options are checked and override the head's defaults. With excluded targets, the head
 * scores only the kept ones (`ctx.compactOutput`) or scores all and pins the excluded (the older, masked layout).
 * With the {@link SOURCE_ROWS_OPTION} option, the head scores an imported model's rows in that model's order.
 */
export function buildHead(name: string, ctx: HeadContext, options: Record<string, unknown> = {}): OutputHead {
  const def = getHeadDefinition(name);
  const { [SOURCE_ROWS_OPTION]: sourceRows, ...own } = options;
  const resolved = resolveHeadOptions(name, own);
  if (sourceRows !== undefined) {
    const parsed = sourceRowsSchema.safeParse(sourceRows);
    if (!parsed.success)
      throw new RangeError(`head '${name}': ${SOURCE_ROWS_OPTION}: ${describeIssues(parsed.error.issues)}`);
    if (ctx.compactOutput) throw new RangeError(`head '${name}': ${SOURCE_ROWS_OPTION} takes no compact output layer`);
    const head = sourceOrderHead(ctx, parsed.data, (c) => def.build(c, resolved));
    return ctx.excludedTargets?.length ? maskedHead(head, ctx) : head;
  }
  if (!ctx.excludedTargets?.length) return def.build(ctx, resolved);
  if (ctx.compactOutput) return compactHead(ctx, (compact) => def.build(compact, resolved));
  return maskedHead(def.build(ctx, resolved), ctx);
}

/**
 * The head's target vectors from a built model's parameters, or null when the head has none to read. `rowIds`
 * (a compact output layer's, `OutputHead.rowIds`) names the vocabulary id of each row when the matrix has one row
 * per kept target rather than one per id (a target embedding read by a shared head keeps all |V| rows).
 */
export function readTargetMatrix(name: string, params: ParamStore, rowIds?: Int32Array): TargetMatrix | null {
  const def = getHeadDefinition(name);
  if (!def.targetMatrix) return null;
  const m = def.targetMatrix(params);
  const ids = rowIds !== undefined && m.rows === rowIds.length ? { ids: rowIds } : {};
  return { kind: def.frozen ? 'frozen' : 'learned', ...m, ...ids };
}

/** The head built over the source rows, its logits [N, rows] gathered into frost's [N, |V|] (see SourceRows). */
function sourceOrderHead(ctx: HeadContext, order: SourceRows, build: (c: HeadContext) => OutputHead): OutputHead {
  const V = ctx.vocabSize;
  const rowIds = Int32Array.from({ length: order.rows }, (_, r) => order.moved[String(r)] ?? r);
  const from = new Int32Array(V).fill(-1);
  for (const [r, id] of rowIds.entries()) {
    if (id >= V) throw new RangeError(`${SOURCE_ROWS_OPTION}: source row ${r} goes to id ${id}, past |V| = ${V}`);
    if (from[id] !== -1) throw new RangeError(`${SOURCE_ROWS_OPTION}: id ${id} is source rows ${from[id]} and ${r}`);
    from[id] = r;
  }
  const excluded = new Set(ctx.excludedTargets ?? []);
  for (const [id, r] of from.entries()) {
    if (r !== -1) continue;
    // An id no source row scores (an imported model's decoder-start row) must be pinned: it reads row 0.
    if (!excluded.has(id))
      throw new RangeError(`${SOURCE_ROWS_OPTION}: id ${id} has no source row and is not excluded`);
    from[id] = 0;
  }
  const head = build({ ...ctx, vocabSize: order.rows, rowIds, excludedTargets: undefined, compactOutput: undefined });
  if (head.sharedEmbeddingOnnx !== undefined)
    throw new RangeError(
      `head '${head.name}' rescales the embedding's rows, which ${SOURCE_ROWS_OPTION} does not take`,
    );
  const index = ctx.params.auxiliary(tf.tensor1d(from, 'int32')) as tf.Tensor1D;
  return {
    name: head.name,
    logits: (f, training) => tf.tidy(() => tf.gather(head.logits(f, training), index, 1) as tf.Tensor2D),
    toOnnx: (g, f, onnx) =>
      g.op('Gather', [head.toOnnx(g, f, onnx), g.constInt64(Array.from(from), [V], 'source_rows')], { axis: 1 }),
    ...(head.generatedParams ? { generatedParams: head.generatedParams } : {}),
    describe: () => ({ ...head.describe(), [SOURCE_ROWS_OPTION]: { rows: order.rows, moved: order.moved } }),
  };
}
