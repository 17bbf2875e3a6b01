import { type Command, Option } from 'commander';
import { resolve } from 'node:path';
import { archNames, headNames, resolveArchConfig } from '../../../models/index.ts';
import { initBackend } from '../../../train/backend/select.ts';
import { detectCorpusKind, DEFAULT_LANGS } from '../../../train/data/corpus.ts';
import { runConfigSchema } from '../../../train/run-config.ts';
import { resume, train } from '../../../train/trainer.ts';

interface TrainFlags {
  arch: string;
  head: string;
  data?: string;
  src?: string;
  tgt?: string;
  preset: string;
  set: string[];
  headOption: string[];
  out?: string;
  resume?: string;
  epochs?: number;
  maxMinutes?: number;
  seed: number;
  lr: number;
  batchSize: number;
  minFreq?: number;
  valSentences?: number;
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
export function parseSettings(pairs: string[], flag: string): Record<string, unknown> {
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

export function registerTrain(program: Command): void {
  program
    .command('train')
    .description('train a translation model (or continue one with --resume)')
    .addOption(new Option('--arch <name>', 'architecture').choices(archNames()).default('rnn-attn'))
    .addOption(new Option('--head <name>', 'output head').choices(headNames()).default('learned'))
    .option('--data <dir>', 'corpus folder (Multi30k .gz files or a `frost data toy` folder)')
    .option('--src <lang>', 'source language')
    .option('--tgt <lang>', 'target language')
    .option('--preset <name>', 'architecture preset: tiny, small, paper', 'small')
    .option('--set <key=value>', 'override one architecture setting (repeatable)', collect, [])
    .option('--head-option <key=value>', 'set one output-head option (repeatable)', collect, [])
    .option('--out <dir>', 'run folder to create')
    .option('--resume <dir>', 'continue the run in this folder from its last checkpoint')
    .option('--epochs <n>', 'stop after n epochs', positiveInt('epochs'))
    .option('--max-minutes <m>', 'stop after m minutes of training', positiveNumber('max-minutes'))
    .option('--seed <n>', 'seed of everything random', (v) => Number(v), 1)
    .option('--lr <rate>', 'Adam learning rate', positiveNumber('lr'), 1e-3)
    .option('--batch-size <n>', 'sentences per batch', positiveInt('batch-size'), 64)
    .option('--min-freq <n>', 'vocabulary minimum frequency (default 2, 1 for plain corpora)', positiveInt('min-freq'))
    .option('--val-sentences <n>', 'validation sentences decoded for BLEU each epoch', positiveInt('val-sentences'))
    .addOption(new Option('--backend <name>', 'tfjs backend').choices(['auto', 'tensorflow', 'wasm', 'cpu']).default('auto'))
    .option('--quiet', 'no progress output')
    .action(async (flags: TrainFlags) => {
      await initBackend({ prefer: flags.backend, quiet: flags.quiet });
      if (flags.resume) {
        const result = await resume(resolve(flags.resume), { epochs: flags.epochs, maxMinutes: flags.maxMinutes }, { quiet: flags.quiet });
        result.model.params.dispose();
        return;
      }
      if (!flags.out) throw new Error('give --out DIR for a new run (or --resume DIR to continue one)');
      if (!flags.data) throw new Error('give --data DIR (see `frost data --help` to get a corpus)');
      const dataDir = resolve(flags.data);
      const kind = detectCorpusKind(dataDir);
      const config = runConfigSchema.parse({
        arch: flags.arch,
        preset: flags.preset,
        archConfig: resolveArchConfig(flags.arch, flags.preset, parseSettings(flags.set, '--set')),
        head: { name: flags.head, options: parseSettings(flags.headOption, '--head-option') },
        seed: flags.seed,
        data: { dir: dataDir, kind, src: flags.src ?? DEFAULT_LANGS[kind].src, tgt: flags.tgt ?? DEFAULT_LANGS[kind].tgt },
        tokenizer: kind === 'plain' ? 'whitespace' : 'multi30k',
        vocab: { minFreq: flags.minFreq ?? (kind === 'plain' ? 1 : 2) },
        batch: { maxSentences: flags.batchSize },
        optim: { learningRate: flags.lr },
        epochs: flags.epochs,
        maxMinutes: flags.maxMinutes,
        valSentences: flags.valSentences,
      });
      const result = await train(config, resolve(flags.out), { quiet: flags.quiet });
      result.model.params.dispose();
    });
}
