import { resolve } from 'node:path';
import { resolveArchConfig } from '../../../../models/index.ts';
import { resolveRecipe } from '../../../../train/recipe.ts';
import type { NewRunFlags } from './types.ts';

/** The settings translation and captioning runs share, after refusing the language model's flags. */
export function seq2seqCommon(flags: NewRunFlags, arch: string) {
  for (const [flag, value] of [
    ['--bptt', flags.bptt],
    ['--split', flags.split],
  ] as const) {
    if (value !== undefined) throw new Error(`${flag} is for --task lm`);
  }
  if (flags.data === undefined) throw new Error('give --data DIR (see `frost data --help` to get a corpus)');
  const dataDir = resolve(flags.data);
  // The recipe: flags, else the architecture's defaults (ArchDefinition.recipe), else the task's.
  const { maxTokens, ...recipe } = resolveRecipe(arch, flags);
  const common = {
    arch,
    preset: flags.preset,
    archConfig: resolveArchConfig(arch, flags.preset, flags.set),
    head: { name: flags.head, options: flags.headOption },
    seed: flags.seed,
    ...recipe,
    epochs: flags.epochs,
    maxMinutes: flags.maxMinutes,
    maxUpdates: flags.maxUpdates,
    ...(flags.checkpointMinutes !== undefined ? { checkpointMinutes: flags.checkpointMinutes } : {}),
    valSentences: flags.valSentences,
  };
  return { dataDir, maxTokens, common };
}
