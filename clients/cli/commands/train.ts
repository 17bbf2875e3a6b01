import { type Command, Option } from 'commander';
import { resolve } from 'node:path';
import { archNames, getHeadDefinition, headNames } from '../../../models/index.ts';
import { lmArchNames } from '../../../models/lm/index.ts';
import { initBackend } from '../../../train/backend/select.ts';
import { taskNames } from '../../../train/tasks/index.ts';
import { resumeLanguageModel, trainLanguageModel } from '../../../train/lm/lm-trainer.ts';
import { readRunConfig } from '../../../train/run-config.ts';
import { resume, train } from '../../../train/trainer.ts';
import { newRunConfig, type NewRunFlags } from './train-config.ts';
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

export function registerTrain(program: Command): void {
  program
    .command('train')
    .description('train a translation, captioning or language model (or continue one with --resume)')
    // Language models train in their own loop (train/lm/), not through the seq2seq task registry.
    .addOption(new Option('--task <name>', 'what to learn').choices([...taskNames(), 'lm']).default('translation'))
    .addOption(
      new Option(
        '--arch <name>',
        'architecture (default: rnn-attn for translation, show-attend-tell for caption, lstm-lm for lm)',
      ).choices([...archNames(), ...lmArchNames()]),
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
    .option('--preset <name>', 'architecture preset: tiny, small, paper', 'small')
    .option('--set <key=value>', 'override one architecture setting (repeatable)', collect, [])
    .option('--head-option <key=value>', `set one output-head option (repeatable; ${headOptionsHelp()})`, collect, [])
    .option('--out <dir>', 'run folder to create')
    .option('--resume <dir>', 'continue the run in this folder from its last checkpoint')
    .option('--epochs <n>', 'stop after n epochs', positiveInt('epochs'))
    .option('--max-minutes <m>', 'stop after m minutes of training', positiveNumber('max-minutes'))
    .option('--seed <n>', 'seed of everything random', intOption('--seed', 0, 0xffff_ffff), 1)
    .option('--lr <rate>', 'Adam learning rate (default 1e-3; caption 4e-4)', positiveNumber('lr'))
    .option('--batch-size <n>', 'sentences (captions) per batch (default 64; caption 32)', positiveInt('batch-size'))
    .option(
      '--min-freq <n>',
      'vocabulary minimum frequency (default 2, 1 for plain corpora, 5 for captions)',
      positiveInt('min-freq'),
    )
    .addOption(
      new Option(
        '--vocab <kind>',
        "word vocabulary (the paper's, rare words are <unk>) or BPE subwords learned from the training text (cased, never <unk>)",
      )
        .choices(['word', 'bpe'])
        .default('word'),
    )
    .option(
      '--vocab-size <n>',
      'bpe: pieces per model (default 8000); word: cap on the vocabulary',
      positiveInt('vocab-size'),
    )
    .option(
      '--joint-vocab',
      'bpe: one subword model and vocabulary for both languages, one embedding matrix for source, target and output',
    )
    .option(
      '--val-sentences <n>',
      'validation sentences (caption: images, default 500) decoded for BLEU each epoch',
      positiveInt('val-sentences'),
    )
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
    )
    .addOption(
      new Option('--backend <name>', 'tfjs backend').choices(['auto', 'tensorflow', 'wasm', 'cpu']).default('auto'),
    )
    .option('--quiet', 'no progress output')
    .action(async (flags: TrainFlags) => {
      await initBackend({ prefer: flags.backend, quiet: flags.quiet });
      if (flags.resume) {
        const runDir = resolve(flags.resume);
        const budget = { epochs: flags.epochs, maxMinutes: flags.maxMinutes };
        if ((await readRunConfig(runDir)).task === 'lm') {
          (await resumeLanguageModel(runDir, budget, { quiet: flags.quiet })).model.params.dispose();
          return;
        }
        const result = await resume(
          resolve(flags.resume),
          { epochs: flags.epochs, maxMinutes: flags.maxMinutes },
          { quiet: flags.quiet },
        );
        result.model.params.dispose();
        return;
      }
      if (!flags.out) throw new Error('give --out DIR for a new run (or --resume DIR to continue one)');
      if (!flags.data && flags.task !== 'lm')
        throw new Error('give --data DIR (see `frost data --help` to get a corpus)');
      const runDir = resolve(flags.out);
      const config = await newRunConfig(
        {
          ...flags,
          data: flags.data,
          set: parseSettings(flags.set, '--set'),
          headOption: parseSettings(flags.headOption, '--head-option'),
        },
        runDir,
      );
      if (config.task === 'lm') {
        (await trainLanguageModel(config, runDir, { quiet: flags.quiet })).model.params.dispose();
        return;
      }
      const result = await train(config, runDir, { quiet: flags.quiet });
      result.model.params.dispose();
    });
}
