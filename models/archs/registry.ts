import { parseOptions } from '../../core/options.ts';
import { Registry } from '../../core/registry.ts';
import type { ArchDefinition, ModelSizes, Seq2SeqModel } from './types.ts';

const archs = new Registry<ArchDefinition<object>>('architecture');

export function registerArch<Config extends object>(def: ArchDefinition<Config>): void {
  archs.register(def.name, def as unknown as ArchDefinition<object>);
}

export function archNames(): string[] {
  return archs.names();
}

export function getArch(name: string): ArchDefinition<object> {
  return archs.get(name);
}

/**
 * The preset's config with overrides (`--set`) applied, checked against the architecture's
 * settings schema: an unknown key or a wrong type is refused (one line naming the settings or the
 * expected type), so typos don't pass silently.
 */
export function resolveArchConfig(
  arch: string,
  preset: string,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  const def = getArch(arch);
  const base = def.presets[preset];
  if (!base)
    throw new RangeError(`unknown preset '${preset}' for '${arch}'; presets: ${Object.keys(def.presets).join(', ')}`);
  return { ...parseOptions(def.settings, { ...base, ...overrides }, `architecture '${arch}'`, 'setting') };
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
