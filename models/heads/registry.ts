import { parseOptions } from '../../core/options.ts';
import { Registry } from '../../core/registry.ts';
import type { ParamStore } from '../params.ts';
import type { TargetMatrix } from './target-matrix.ts';
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

/** Builds a head by name; options are checked and override the head's defaults. */
export function buildHead(name: string, ctx: HeadContext, options: Record<string, unknown> = {}): OutputHead {
  const head = getHeadDefinition(name).build(ctx, resolveHeadOptions(name, options));
  return ctx.excludedTargets?.length ? maskedHead(head, ctx) : head;
}

/** The head's target vectors from a built model's parameters, or null when the head has none to read. */
export function readTargetMatrix(name: string, params: ParamStore): TargetMatrix | null {
  const def = getHeadDefinition(name);
  if (!def.targetMatrix) return null;
  return { kind: def.frozen ? 'frozen' : 'learned', ...def.targetMatrix(params) };
}
