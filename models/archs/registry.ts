import { parseOptions } from '../../core/options.ts';
import { Registry } from '../../core/registry.ts';
import type { LanguageModel } from './lm-types.ts';
import type { ArchBase, ArchDefinition, ArchTask, LmArchDefinition, ModelSizes, Seq2SeqModel } from './types.ts';

/** What kind of model an architecture builds: an encoder-decoder (translation, captioning) or a language model. */
export type ArchFamily = 'seq2seq' | 'lm';

/** Every architecture, of both families, under one name space: `--arch` names one of them. */
type Registered = { family: 'seq2seq'; def: ArchDefinition<object> } | { family: 'lm'; def: LmArchDefinition<object> };

const archs = new Registry<Registered>('architecture');

/** What a lookup of one family calls its entries ("unknown language-model architecture 'x'"). */
const FAMILY_NAMES: Readonly<Record<ArchFamily, string>> = {
  seq2seq: 'architecture',
  lm: 'language-model architecture',
};

/** Adds an encoder-decoder architecture; each architecture file calls this or {@link registerLmArch} once. */
export function registerArch<Config extends object>(def: ArchDefinition<Config>): void {
  archs.register(def.name, { family: 'seq2seq', def: def as unknown as ArchDefinition<object> });
}

/** Adds a language-model architecture. */
export function registerLmArch<Config extends object>(def: LmArchDefinition<Config>): void {
  archs.register(def.name, { family: 'lm', def: def as unknown as LmArchDefinition<object> });
}

/** Names in registration order: all, those of one family, or those that serve one task. */
export function archNames(filter: { family?: ArchFamily; task?: ArchTask } = {}): string[] {
  return archs.names().filter((name) => {
    const entry = archs.get(name);
    return (
      (filter.family === undefined || entry.family === filter.family) &&
      (filter.task === undefined || entry.def.tasks.includes(filter.task))
    );
  });
}

/** Any architecture, whatever it builds (its presets, settings and tasks). */
export function archDefinition(name: string): ArchBase<object> {
  return archs.get(name).def;
}

/** The architecture of one family; another family's is refused as unknown, listing this family's names. */
function ofFamily(name: string, family: ArchFamily): Registered['def'] {
  const entry = archs.find(name);
  if (entry?.family !== family)
    throw new RangeError(`unknown ${FAMILY_NAMES[family]} '${name}'; known: ${archNames({ family }).join(', ')}`);
  return entry.def;
}

/** An encoder-decoder architecture by name. */
export function getArch(name: string): ArchDefinition<object> {
  return ofFamily(name, 'seq2seq') as ArchDefinition<object>;
}

/** A language-model architecture by name. */
export function getLmArch(name: string): LmArchDefinition<object> {
  return ofFamily(name, 'lm') as LmArchDefinition<object>;
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
  const def = archDefinition(arch);
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

export function buildLanguageModel(
  arch: string,
  config: Record<string, unknown>,
  vocabSize: number,
  head: { name: string; options?: Record<string, unknown> },
  seed: number,
): LanguageModel {
  return getLmArch(arch).build(config, vocabSize, head, seed);
}
