import { parseOptions } from '../../core/options.ts';
import { Registry } from '../../core/registry.ts';
import type { LanguageModel, LmArchDefinition } from './types.ts';

/**
 * Language-model architectures, apart from the seq2seq ones (models/archs/registry.ts): they build
 * a different kind of model (types.ts), and `--task lm` is the only task that asks for them.
 */
const lmArchs = new Registry<LmArchDefinition<object>>('language-model architecture');

export function registerLmArch<Config extends object>(def: LmArchDefinition<Config>): void {
  lmArchs.register(def.name, def as unknown as LmArchDefinition<object>);
}

export function lmArchNames(): string[] {
  return lmArchs.names();
}

export function getLmArch(name: string): LmArchDefinition<object> {
  return lmArchs.get(name);
}

/** The preset's config with `--set` overrides, checked against the architecture's settings. */
export function resolveLmArchConfig(
  arch: string,
  preset: string,
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  const def = getLmArch(arch);
  const base = def.presets[preset];
  if (!base)
    throw new RangeError(`unknown preset '${preset}' for '${arch}'; presets: ${Object.keys(def.presets).join(', ')}`);
  return { ...parseOptions(def.settings, { ...base, ...overrides }, `architecture '${arch}'`, 'setting') };
}

export function buildLanguageModel(
  arch: string,
  config: Record<string, unknown>,
  vocabSize: number,
  head: { name: string; options?: Record<string, unknown> },
  seed: number,
): LanguageModel {
  return getLmArch(arch).build(config, vocabSize, head, seed);
}
