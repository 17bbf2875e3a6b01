import type { ArchDefinition, ModelSizes, Seq2SeqModel } from './types.ts';

const archs = new Map<string, ArchDefinition<object>>();

export function registerArch<Config extends object>(def: ArchDefinition<Config>): void {
  if (archs.has(def.name)) throw new Error(`architecture '${def.name}' is already registered`);
  archs.set(def.name, def as unknown as ArchDefinition<object>);
}

export function archNames(): string[] {
  return [...archs.keys()];
}

export function getArch(name: string): ArchDefinition<object> {
  const def = archs.get(name);
  if (!def) throw new RangeError(`unknown architecture '${name}'; known: ${archNames().join(', ')}`);
  return def;
}

/** The preset's config with overrides applied; unknown keys are refused so typos don't pass silently. */
export function resolveArchConfig(arch: string, preset: string, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const def = getArch(arch);
  const base = def.presets[preset];
  if (!base) throw new RangeError(`unknown preset '${preset}' for '${arch}'; presets: ${Object.keys(def.presets).join(', ')}`);
  for (const key of Object.keys(overrides)) {
    if (!(key in base)) throw new RangeError(`'${key}' is not a setting of '${arch}' (settings: ${Object.keys(base).join(', ')})`);
  }
  return { ...base, ...overrides };
}

export function buildModel(
  arch: string,
  config: Record<string, unknown>,
  sizes: ModelSizes,
  head: { name: string; options?: Record<string, unknown> },
  seed: number,
): Seq2SeqModel {
  return getArch(arch).build(config, sizes, head, seed);
}
