import { parseOptions } from '../../core/options.ts';
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
 * Builds a head by name; options are checked and override the head's defaults. With excluded targets, the head
 * scores only the kept ones (`ctx.compactOutput`) or scores all and pins the excluded (the older, masked layout).
 */
export function buildHead(name: string, ctx: HeadContext, options: Record<string, unknown> = {}): OutputHead {
  const def = getHeadDefinition(name);
  const resolved = resolveHeadOptions(name, options);
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
