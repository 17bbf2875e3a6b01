import type { HeadContext, HeadDefinition, OutputHead } from './types.ts';

const heads = new Map<string, HeadDefinition<object>>();

/** Adds a head under its name; each head file calls this once. */
export function registerHead<Options extends object>(def: HeadDefinition<Options>): void {
  if (heads.has(def.name)) throw new Error(`output head '${def.name}' is already registered`);
  heads.set(def.name, def as unknown as HeadDefinition<object>);
}

export function headNames(): string[] {
  return [...heads.keys()];
}

export function getHeadDefinition(name: string): HeadDefinition<object> {
  const def = heads.get(name);
  if (!def) throw new RangeError(`unknown output head '${name}'; known heads: ${headNames().join(', ')}`);
  return def;
}

/** Builds a head by name; options override the head's defaults. */
export function buildHead(name: string, ctx: HeadContext, options: Record<string, unknown> = {}): OutputHead {
  const def = getHeadDefinition(name);
  return def.build(ctx, { ...def.defaults, ...options });
}
