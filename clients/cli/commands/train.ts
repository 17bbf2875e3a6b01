import { Command, Option } from 'commander';
import { resolve } from 'node:path';
import { archDefinition, archNames, getHeadDefinition, headNames } from '../../../models/index.ts';
import { initBackend } from '../../../train/backend/select.ts';
import { scheduleNames } from '../../../train/schedules/index.ts';
import { taskNames } from '../../../train/tasks/index.ts';
import { resume, train } from '../../../train/trainer.ts';
import { newRunConfig, type NewRunFlags } from './train-config.ts';
import type { RunConfig } from '../../../train/run-config.ts';
import { intOption } from './serve.ts';

/** The flags as commander parses them: new-run flags (before key=value parsing) plus run control. */
interface TrainFlags extends Omit<NewRunFlags, 'data' | 'set' | 'headOption'> {
  data?: string;
  set: string[];
  headOption: string[];
  out?: string;
  resume?: string;
  backend: 'auto' | 'tensorflow' | 'wasm' | 'cpu';
  quiet?: boolean;
}

const positiveInt = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, got '${v}'`);
  return n;
};
const positiveNumber = (name: string) => (v: string) => {
  const n = Number(v);
  if (!(n > 0)) throw new Error(`--${name} must be a positive number, got '${v}'`);
  return n;
};
const nonNegativeNumber = (name: string) => (v: string) => {
  const n = Number(v);
  if (!(n >= 0) || v.trim() === '') throw new Error(`--${name} must be a number >= 0, got '${v}'`);
  return n;
};
const nonNegativeInt = (name: string) => (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || v.trim() === '')
    throw new Error(`--${name} must be an integer >= 0, got '${v}'`);
  return n;
};
/** `0.9,0.98` (fairseq writes `'(0.9, 0.98)'`; brackets and spaces are accepted too). */
const adamBetas = (v: string): [number, number] => {
  const parts = v.replace(/[()[\]\s]/g, '').split(',');
  const betas = parts.map(Number);
  if (parts.length !== 2 || !betas.every((b) => b >= 0 && b < 1))
    throw new Error(`--adam-betas expects two numbers in [0, 1) as beta1,beta2 (e.g. 0.9,0.98), got '${v}'`);
  return [betas[0]!, betas[1]!];
};
/** A number below 1, and above 0 or at least 0 as `zero` says: `[0, 1)` or `(0, 1)`. */
const fraction = (name: string, zero: 'with' | 'without') => (v: string) => {
  const n = Number(v);
  if (!(n < 1 && (zero === 'with' ? n >= 0 : n > 0)) || v.trim() === '')
    throw new Error(`--${name} must be in ${zero === 'with' ? '[0' : '(0'}, 1), got '${v}'`);
  return n;
};
const collect = (v: string, acc: string[]) => [...acc, v];

/** key=value pairs with JSON values where they parse ("hidden=128", "dropout=0.1"). */
function parseSettings(pairs: string[], flag: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`${flag} expects key=value, got '${pair}'`);
    const raw = pair.slice(eq + 1);
    let value: unknown = raw;
    try {
      value = JSON.parse(raw);
    } catch {
      /* a bare string */
    }
    out[pair.slice(0, eq)] = value;
  }
  return out;
}

/** The heads that take options, and theirs, from the heads' schemas: `drill: layers; ...`. */
function headOptionsHelp(): string {
  const withOptions = headNames()
    .map((name) => [name, Object.keys(getHeadDefinition(name).options.shape)] as const)
    .filter(([, keys]) => keys.length > 0);
  return withOptions.map(([name, keys]) => `${name}: ${keys.join(', ')}`).join('; ');
}

/** Recipe flags (train/recipe.ts), refused with --resume. */
const RECIPE_FLAGS: [keyof TrainFlags, string][] = [
  ['lr', '--lr'],
  ['labelSmoothing', '--label-smoothing'],
  ['adamBetas', '--adam-betas'],
  ['adamEps', '--adam-eps'],
  ['clipNorm', '--clip-norm'],
  ['lrSchedule', '--lr-schedule'],
  ['warmupSteps', '--warmup-steps'],
  ['warmupInitLr', '--warmup-init-lr'],
  ['maxTokens', '--max-tokens'],
  ['keepLast', '--keep-last'],
  ['emaDecay', '--ema-decay'],
];

/** Each architecture's presets, from the registry: "rnn-attn: tiny, small, paper; ...". */
function presetsHelp(): string {
  return archNames()
    .map((name) => `${name}: ${Object.keys(archDefinition(name).presets).join(', ')}`)
    .join('; ');
}

/** The arguments after `frost train`, as typed: clients/cli/main.ts parses this process's command line. */
function trainArguments(): string[] {
  const at = process.argv.indexOf('train', 2);
  return at < 0 ? [] : process.argv.slice(at + 1);
}

export function registerTrain(program: Command): void {
  trainOptions(
    program
      .command('train')
      .description('train a translation, captioning or language model (or continue one with --resume)'),
  ).action(trainAction);
}

/** Every `frost train` option, in --help's order. */
function trainOptions(command: Command): Command {
  for (const add of [modelOptions, runOptions, recipeOptions, dataOptions, captionOptions]) add(command);
  return command
    .addOption(
      new Option('--backend <name>', 'tfjs backend').choices(['auto', 'tensorflow', 'wasm', 'cpu']).default('auto'),
    )
    .option('--quiet', 'no progress output');
}

/**
 * The config of a new run from `frost train` arguments (no `--out`, `--resume` or run control), checked as the
 * command checks them: how `frost demo` starts its recipe (clients/cli/demo-recipes.json) in this process.
 * @throws Error naming the argument commander or the run's schema refused
 */
export async function newRunConfigFromArguments(args: readonly string[], runDir: string): Promise<RunConfig> {
  const command = trainOptions(new Command('train'))
    .exitOverride()
    .configureOutput({ writeErr: () => {} });
  let flags: TrainFlags;
  try {
    flags = command.parse([...args], { from: 'user' }).opts<TrainFlags>();
  } catch (err) {
    throw new Error(`frost train ${args.join(' ')}: ${(err as Error).message}`, { cause: err });
  }
  if (flags.out !== undefined || flags.resume !== undefined)
    throw new Error(`frost train ${args.join(' ')}: --out and --resume are the caller's, not the recipe's`);
  const config = await configOfFlags(flags, runDir);
  config.argv = [...args];
  return config;
}

/** A new run's config from commander's flags, the key=value settings parsed. */
function configOfFlags(flags: TrainFlags, runDir: string): Promise<RunConfig> {
  return newRunConfig(
    {
      ...flags,
      set: parseSettings(flags.set, '--set'),
      headOption: parseSettings(flags.headOption, '--head-option'),
    },
    runDir,
  );
}

/** What to learn: the task, architecture, head, corpus and the settings of each. */
function modelOptions(command: Command): Command {
  return command
    .addOption(new Option('--task <name>', 'what to learn').choices(taskNames()).default('translation'))
    .addOption(
      new Option(
        '--arch <name>',
        'architecture (default: rnn-attn for translation, show-attend-tell for caption, lstm-lm for lm)',
      ).choices(archNames()),
    )
    .addOption(new Option('--head <name>', 'output head').choices(headNames()).default('learned'))
    .option(
      '--data <dir>',
      'corpus folder (Multi30k .gz files or a `frost data toy` folder), or a caption data set (Karpathy dataset_*.json or COCO annotations); lm: a folder with train/valid/test text files or one text file (default: Multi30k English + Flickr8k captions)',
    )
    .option('--bptt <n>', 'lm: tokens per truncated-BPTT window (default 35)', positiveInt('bptt'))
    .option(
      '--split <valid,test>',
      'lm, one-file corpus: fractions of its last lines for valid and test (default 0.05,0.05)',
    )
    .option('--src <lang>', 'source language (translation)')
    .option('--tgt <lang>', 'target language (translation)')
    .option('--preset <name>', `architecture preset (${presetsHelp()})`, 'small')
    .option('--set <key=value>', 'override one architecture setting (repeatable)', collect, [])
    .option('--head-option <key=value>', `set one output-head option (repeatable; ${headOptionsHelp()})`, collect, []);
}

/** Where the run goes (or which run to continue), its budget and its seed. */
function runOptions(command: Command): Command {
  return command
    .option('--out <dir>', 'run folder to create')
    .option(
      '--resume <dir>',
      'continue the run in this folder from its newest complete checkpoint (saved after every epoch, every --checkpoint-minutes, and where Ctrl-C or SIGTERM stopped it: exit status 130/143; a second signal stops at once, without saving); refused when it has none',
    )
    .option(
      '--checkpoint-minutes <m>',
      'save the `last` checkpoint this often inside an epoch too, so a kill loses at most this much training (default 5; with --resume, from then on)',
      positiveNumber('checkpoint-minutes'),
    )
    .option('--epochs <n>', 'stop after n epochs', positiveInt('epochs'))
    .option('--max-minutes <m>', 'stop after m minutes of training', positiveNumber('max-minutes'))
    .option(
      '--max-updates <n>',
      "stop after n optimizer updates (fairseq's --max-update): a budget that does not depend on the machine's load",
      positiveInt('max-updates'),
    )
    .option('--seed <n>', 'seed of everything random', intOption('--seed', 0, 0xffff_ffff), 1);
}

/** The training recipe (train/recipe.ts, fixed when a run starts) and the batches. */
function recipeOptions(command: Command): Command {
  return command
    .option(
      '--lr <rate>',
      "Adam learning rate, a warm-up schedule's peak (default: the architecture's recipe, else 1e-3; caption 4e-4)",
      positiveNumber('lr'),
    )
    .option(
      '--label-smoothing <eps>',
      "label smoothing ε, fairseq's label_smoothed_cross_entropy (default: the architecture's recipe, else 0)",
      fraction('label-smoothing', 'with'),
    )
    .option('--adam-betas <b1,b2>', "Adam β₁,β₂ (default 0.9,0.999; transformer's recipe 0.9,0.98)", adamBetas)
    .option('--adam-eps <eps>', 'Adam ε (default 1e-8)', positiveNumber('adam-eps'))
    .option(
      '--clip-norm <n>',
      'clip gradients to this global L2 norm; 0: no clipping (default 5)',
      nonNegativeNumber('clip-norm'),
    )
    .addOption(
      new Option(
        '--lr-schedule <name>',
        "learning-rate schedule: plateau (the paper's decay on no validation gain), inverse-sqrt (warm-up, then 1/sqrt(step)) or polynomial-decay (to 0 at --max-updates, else over --max-minutes); default: the architecture's recipe, else plateau",
      ).choices(scheduleNames()),
    )
    .option(
      '--warmup-steps <n>',
      'inverse-sqrt, polynomial-decay: warm-up updates (default 4000, 0)',
      positiveInt('warmup-steps'),
    )
    .option(
      '--warmup-init-lr <rate>',
      'inverse-sqrt, polynomial-decay: learning rate of the first update (default 0)',
      nonNegativeNumber('warmup-init-lr'),
    )
    .option('--batch-size <n>', 'sentences (captions) per batch (default 64; caption 32)', positiveInt('batch-size'))
    .option(
      '--max-tokens <n>',
      'translation: at most n padded tokens per batch (B × longest side), as fairseq; with no --batch-size, no sentence cap',
      positiveInt('max-tokens'),
    )
    .option(
      '--keep-last <n>',
      'keep the last n epoch checkpoints for `frost export --average-last` (default 5; 0: none)',
      nonNegativeInt('keep-last'),
    )
    .option(
      '--ema-decay <d>',
      "validate, keep and export an exponential moving average of the weights with this decay, e.g. 0.999 (fairseq's --ema-decay; OpenNMT's -average_decay is 1 minus it); default: the weights themselves",
      fraction('ema-decay', 'without'),
    );
}

/** The vocabulary and the validation. */
function dataOptions(command: Command): Command {
  return command
    .option(
      '--min-freq <n>',
      'vocabulary minimum frequency (default 2, 1 for plain corpora, 5 for captions)',
      positiveInt('min-freq'),
    )
    .addOption(
      new Option(
        '--vocab <kind>',
        "word vocabulary (the paper's, rare words are <unk>), or BPE or unigram (SentencePiece) subwords learned from the training text (cased, never <unk>)",
      )
        .choices(['word', 'bpe', 'unigram'])
        .default('word'),
    )
    .option(
      '--vocab-size <n>',
      'bpe, unigram: pieces per model, specials and 256 byte pieces included (default 8000); word: cap on the vocabulary',
      positiveInt('vocab-size'),
    )
    .option(
      '--joint-vocab',
      'bpe, unigram: one subword model and vocabulary for both languages, one embedding matrix for source, target and output',
    )
    .option(
      '--keep-unseen-outputs',
      "bpe, unigram: let the output softmax score pieces the training targets never use (a joint vocabulary's source-only pieces); by default they are excluded",
    )
    .option(
      '--smooth-seen-only',
      "bpe, unigram: label smoothing spreads ε over the pieces the targets use only, and the output layer stays compact; by default ε goes to the whole vocabulary (fairseq's), which needs every piece scored",
    )
    .option(
      '--val-sentences <n>',
      'validation sentences (caption: images, default 500) decoded for BLEU each epoch',
      positiveInt('val-sentences'),
    );
}

/** Captioning: the image input and its encoder. */
function captionOptions(command: Command): Command {
  return command
    .option(
      '--encoder <file.onnx>',
      'caption: a pretrained image encoder in ONNX, run frozen (features cached; merged into the export)',
    )
    .option('--encoder-output <name>', 'caption: the --encoder output to use as features (default: its first)')
    .option(
      '--image-size <n>',
      "caption: side of the square model input in pixels (default 128, or --encoder's fixed size)",
      positiveInt('image-size'),
    )
    .option(
      '--image-cache <dir>',
      'caption: where decoded images and encoder features are cached (default data/cache/<data set>)',
    );
}

/** `frost train`: continues the run `--resume` names, or starts a new one in `--out`. */
async function trainAction(flags: TrainFlags): Promise<void> {
  await initBackend({ prefer: flags.backend, quiet: flags.quiet });
  if (flags.resume) {
    // The recipe is the run's, in its config.json: a resumed run continues with it, so a flag would be ignored.
    const recipeFlags = RECIPE_FLAGS.filter(([key]) => flags[key] !== undefined).map(([, flag]) => flag);
    if (recipeFlags.length > 0)
      throw new Error(
        `${recipeFlags.join(', ')}: the recipe is fixed when a run starts; --resume continues with the one in ${flags.resume}/config.json`,
      );
    const runDir = resolve(flags.resume);
    const budget = {
      epochs: flags.epochs,
      maxMinutes: flags.maxMinutes,
      maxUpdates: flags.maxUpdates,
      checkpointMinutes: flags.checkpointMinutes,
    };
    const result = await resume(runDir, budget, { quiet: flags.quiet });
    result.model.params.dispose();
    return;
  }
  if (!flags.out) throw new Error('give --out DIR for a new run (or --resume DIR to continue one)');
  const runDir = resolve(flags.out);
  const config = await configOfFlags(flags, runDir);
  config.argv = trainArguments();
  const result = await train(config, runDir, { quiet: flags.quiet });
  result.model.params.dispose();
}
