import { getArch, type ArchRecipe } from '../models/index.ts';
import { getSchedule, resolveScheduleOptions } from './schedules/index.ts';

/**
 * The training recipe of a new run: label smoothing, Adam's settings, the learning-rate schedule,
 * token-based batches, the epoch checkpoints kept for averaging and the weights' moving average.
 * Each value is the user's flag when given, else the architecture's recipe default
 * (ArchDefinition.recipe), else the task's default from the run-config schema. The result is
 * merged into the run config, so a resumed or exported run reads what was used, not what the
 * defaults are by then.
 */
export interface RecipeFlags {
  lr?: number;
  labelSmoothing?: number;
  adamBetas?: [number, number];
  adamEps?: number;
  clipNorm?: number;
  lrSchedule?: string;
  warmupSteps?: number;
  warmupInitLr?: number;
  maxTokens?: number;
  keepLast?: number;
  emaDecay?: number;
}

/** The run-config fields the recipe sets (partial: what is absent takes the schema's default). */
export interface RecipeConfig {
  optim: { learningRate?: number; betas?: [number, number]; epsilon?: number; clipNorm?: number };
  schedule: Record<string, unknown> & { name: string };
  labelSmoothing?: number;
  keepLast?: number;
  maxTokens?: number;
  emaDecay?: number;
}

/** Schedule options a flag or a recipe field sets, by the option's name in the schedule's schema. */
const SCHEDULE_OPTIONS = ['warmupSteps', 'warmupInitLr'] as const;

export function resolveRecipe(arch: string, flags: RecipeFlags): RecipeConfig {
  return recipeWithDefaults(getArch(arch).recipe ?? {}, flags);
}

/** {@link resolveRecipe} with the defaults given, for models outside the seq2seq registry (language models). */
export function recipeWithDefaults(recipe: ArchRecipe, flags: RecipeFlags): RecipeConfig {
  const pick = <T>(flag: T | undefined, fromArch: T | undefined) => flag ?? fromArch;
  const name = flags.lrSchedule ?? recipe.lrSchedule ?? 'plateau';
  const accepted = Object.keys(getSchedule(name).options.shape);
  const options: Record<string, unknown> = {};
  for (const key of SCHEDULE_OPTIONS) {
    // A flag is always passed on (the schedule refuses one it does not take); the architecture's
    // default only where the chosen schedule has the option, so `--lr-schedule plateau` still works
    // for an architecture whose recipe warms up.
    if (flags[key] !== undefined) options[key] = flags[key];
    else if (recipe[key] !== undefined && accepted.includes(key)) options[key] = recipe[key];
  }
  const optim = {
    learningRate: pick(flags.lr, recipe.learningRate),
    betas: pick(flags.adamBetas, recipe.adamBetas),
    epsilon: pick(flags.adamEps, recipe.adamEpsilon),
    clipNorm: pick(flags.clipNorm, recipe.clipNorm),
  };
  return {
    optim: stripUndefined(optim),
    schedule: { name, stopAfter: 20, ...resolveScheduleOptions(name, options) },
    ...stripUndefined({
      labelSmoothing: pick(flags.labelSmoothing, recipe.labelSmoothing),
      keepLast: flags.keepLast,
      emaDecay: flags.emaDecay,
      maxTokens: pick(flags.maxTokens, recipe.maxTokens),
    }),
  };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
