import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { describeIssues } from '../../core/zod-issues.ts';
import { PRECISIONS } from '../../export/precision.ts';

/**
 * What `npm start` (`frost demo`) trains: named recipes, each the `frost train` arguments of a model (data,
 * budget and run folder are the demo's), and the one it trains by default. Plain data in demo-recipes.json, so
 * the benchmark that picks the default (`npm run bench:demo`) trains exactly what the demo would.
 */

/** The arguments the demo (or the benchmark) supplies itself; a recipe that names one is refused. */
const CALLER_FLAGS = ['--data', '--src', '--tgt', '--out', '--resume', '--max-minutes', '--max-updates', '--epochs'];

const recipeSchema = z.object({
  description: z.string().min(1),
  train: z
    .array(z.string())
    .min(1)
    .refine((args) => !args.some((a) => CALLER_FLAGS.includes(a.split('=')[0]!)), {
      message: `a recipe may not set ${CALLER_FLAGS.join(', ')}: the demo gives those`,
    }),
  /**
   * The precision the demo exports and serves (`frost export --precision`; fp16/int8 exports are checked against
   * float32 by validation BLEU, recorded in the model card).
   */
  precision: z.enum(PRECISIONS).default('fp32'),
});
export type DemoRecipe = z.infer<typeof recipeSchema>;

const recipesSchema = z
  .object({ default: z.string(), recipes: z.record(z.string().regex(/^[a-z0-9-]+$/), recipeSchema) })
  .refine((r) => r.default in r.recipes, { message: 'default must name one of the recipes' });
export type DemoRecipes = z.infer<typeof recipesSchema>;

export const DEMO_RECIPES_FILE = new URL('./demo-recipes.json', import.meta.url);

/** Parses and checks a recipes document. @throws Error naming `source` and what is wrong */
export function parseDemoRecipes(json: unknown, source: string): DemoRecipes {
  const parsed = recipesSchema.safeParse(json);
  if (!parsed.success) throw new Error(`${source}: ${describeIssues(parsed.error.issues)}`);
  return parsed.data;
}

let loaded: DemoRecipes | undefined;
/** The recipes shipped with frost (clients/cli/demo-recipes.json). */
export function demoRecipes(): DemoRecipes {
  loaded ??= parseDemoRecipes(JSON.parse(readFileSync(DEMO_RECIPES_FILE, 'utf8')), DEMO_RECIPES_FILE.pathname);
  return loaded;
}

/** Where and how long the demo trains a recipe. */
export interface DemoTraining {
  dataDir: string;
  src: string;
  tgt: string;
  minutes: number;
  /** Replaces the recipe's output head (`frost demo --head`). */
  head?: string;
}

/**
 * The `frost train` arguments of a new demo run (without `--out`): the recipe's, then the demo's data and budget.
 * Commander keeps the last value of a repeated option, so `head` after the recipe replaces the recipe's.
 */
export function demoTrainArguments(recipe: DemoRecipe, training: DemoTraining): string[] {
  return [
    ...recipe.train,
    ...(training.head ? ['--head', training.head] : []),
    '--data',
    training.dataDir,
    '--src',
    training.src,
    '--tgt',
    training.tgt,
    '--max-minutes',
    String(training.minutes),
  ];
}

/** The model's folder name under runs/ and artifacts/: what it translates, with which recipe and head. */
export function demoModelName(recipeName: string, training: Pick<DemoTraining, 'src' | 'tgt' | 'head'>): string {
  return `demo-${training.src}-${training.tgt}-${recipeName}${training.head ? `-${training.head}` : ''}`;
}
