import { resolve } from 'node:path';
import { getLmArch, resolveArchConfig } from '../../../../models/index.ts';
import { recipeWithDefaults } from '../../../../train/recipe.ts';
import { runConfigSchema, type RunConfig } from '../../../../train/run-config.ts';
import { registerNewRunTask } from './registry.ts';
import type { ConfigContext, NewRunFlags } from './types.ts';

/** A language-model run's config (train/lm/): a corpus or the default one, streams and BPTT window. */
function lmRunConfig(flags: NewRunFlags, { arch, subword, vocab }: ConfigContext): RunConfig {
  for (const [flag, value] of [
    ['--src', flags.src],
    ['--tgt', flags.tgt],
    ['--encoder', flags.encoder],
    ['--image-size', flags.imageSize],
    ['--image-cache', flags.imageCache],
    ['--val-sentences', flags.valSentences],
    // The language-model loop (train/lm/) has no smoothing or token batches.
    ['--label-smoothing', flags.labelSmoothing],
    ['--max-tokens', flags.maxTokens],
  ] as const) {
    if (value !== undefined) throw new Error(`${flag} is not for --task lm`);
  }
  const { optim, schedule } = recipeWithDefaults({}, flags);
  let split: { valid: number; test: number } | undefined;
  if (flags.split !== undefined) {
    const [valid, test] = flags.split.split(',').map(Number);
    if (!(valid > 0 && valid < 0.5 && test > 0 && test < 0.5))
      throw new Error(`--split expects two fractions in (0, 0.5) as valid,test, got '${flags.split}'`);
    split = { valid, test };
  }
  return runConfigSchema.parse({
    task: 'lm',
    arch,
    preset: flags.preset,
    archConfig: resolveArchConfig(getLmArch(arch).name, flags.preset, flags.set),
    head: { name: flags.head, options: flags.headOption },
    seed: flags.seed,
    optim,
    schedule,
    epochs: flags.epochs,
    maxMinutes: flags.maxMinutes,
    maxUpdates: flags.maxUpdates,
    ...(flags.checkpointMinutes !== undefined ? { checkpointMinutes: flags.checkpointMinutes } : {}),
    data: { ...(flags.data !== undefined ? { dir: resolve(flags.data) } : {}), ...(split ? { split } : {}) },
    // Given corpora are taken as tokenised (PTB, WikiText); the default one is raw text.
    tokenizer: subword ? 'sentencepiece' : flags.data === undefined ? 'multi30k' : 'whitespace',
    vocab: vocab(flags.minFreq),
    batch: { streams: flags.batchSize ?? 20, bptt: flags.bptt ?? 35 },
    ...(flags.keepLast !== undefined ? { keepLast: flags.keepLast } : {}),
    ...(flags.emaDecay !== undefined ? { emaDecay: flags.emaDecay } : {}),
  });
}

registerNewRunTask({ task: 'lm', defaultArch: 'lstm-lm', defaultData: true, runConfig: lmRunConfig });
