import { type Command, InvalidArgumentError, Option } from 'commander';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { SearchOptions } from '../../../core/decode/types.ts';
import { DEVICES, type Device, loadModelDir } from '../../../core/runtime/load-node.ts';
import type { Seq2SeqRuntime, Translation, TranslationHypothesis } from '../../../core/runtime/seq2seq.ts';
import { intOption } from './serve.ts';

/** Lines decoded together when reading stdin: large enough to batch, small enough to stream. */
const STDIN_BATCH = 32;

interface TranslateFlags {
  beam: number;
  allowUnk?: boolean;
  nBest: number;
  maxLen?: number;
  lengthPenalty?: number;
  json?: boolean;
  device: Device;
  threads: number;
}

/**
 * `frost translate MODEL_DIR [TEXT...]`: translates the arguments, or stdin line by line.
 * Output has one line per input: the best translation, a JSON object with `--json`, or with
 * `--n-best` > 1 (and no `--json`) Moses-style `index ||| text ||| score` lines.
 */
export function registerTranslate(program: Command): void {
  program
    .command('translate')
    .description('translate text with an exported model (arguments, or stdin one sentence per line)')
    .argument('<model-dir>', 'exported model directory (with model-card.json)')
    .argument('[text...]', 'texts to translate; stdin is read when none are given')
    .option('--beam <k>', 'beam size (1: greedy)', intOption('--beam', 1), 5)
    .option('--n-best <n>', 'hypotheses per input (at most --beam)', intOption('--n-best', 1), 1)
    .option('--max-len <n>', 'cap on output tokens', intOption('--max-len', 1))
    .option('--length-penalty <p>', 'score = logProb / length^p', floatOption('--length-penalty'))
    .option('--allow-unk', "word-level models: let the output contain <unk> (the paper's setting; off by default)")
    .option('--json', 'one JSON object per input: {text, score, log_prob, n_best?}')
    .addOption(new Option('--device <device>', 'where to run the model').choices(DEVICES).default('cpu'))
    .option('--threads <n>', 'ONNX Runtime intra-op threads (0: one per core)', intOption('--threads', 0), 0)
    .action(async (modelDir: string, texts: string[], flags: TranslateFlags) => {
      if (flags.nBest > flags.beam) {
        throw new InvalidArgumentError(`--n-best (${flags.nBest}) must not exceed --beam (${flags.beam})`);
      }
      const runtime = await loadModelDir(resolve(modelDir), { device: flags.device, intraOpNumThreads: flags.threads });
      const options: SearchOptions = {
        beam: flags.beam,
        nBest: flags.nBest,
        ...(flags.allowUnk ? { allowUnk: true } : {}),
      };
      if (flags.maxLen !== undefined) options.maxLen = flags.maxLen;
      if (flags.lengthPenalty !== undefined) options.lengthPenalty = flags.lengthPenalty;
      const printer = new Printer(flags);
      try {
        if (texts.length > 0) {
          await translateBatch(runtime, texts, options, printer);
        } else {
          let batch: string[] = [];
          for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
            batch.push(line);
            if (batch.length === STDIN_BATCH) {
              await translateBatch(runtime, batch, options, printer);
              batch = [];
            }
          }
          if (batch.length > 0) await translateBatch(runtime, batch, options, printer);
        }
      } finally {
        await runtime.release();
      }
    });
}

/**
 * Translates one batch and prints it in input order. Blank lines are not sent to the model: they
 * come out blank, so output lines stay aligned with input lines.
 */
async function translateBatch(
  runtime: Seq2SeqRuntime,
  texts: string[],
  options: SearchOptions,
  printer: Printer,
): Promise<void> {
  const todo = texts.map((t, i) => ({ t, i })).filter(({ t }) => t.trim() !== '');
  const done = await runtime.translate(
    todo.map(({ t }) => t),
    options,
  );
  const results: (Translation | null)[] = texts.map(() => null);
  todo.forEach(({ i }, k) => (results[i] = done[k]));
  for (const r of results) printer.print(r);
}

/** Writes results in the chosen format, numbering inputs across batches for n-best lists. */
class Printer {
  private index = 0;

  constructor(private readonly flags: TranslateFlags) {}

  print(t: Translation | null): void {
    const index = this.index++;
    if (this.flags.json) {
      const one = (h: TranslationHypothesis) => ({ text: h.text, score: h.score, log_prob: h.logProb });
      const body = t === null ? { text: '' } : t.nBest ? { ...one(t), n_best: t.nBest.map(one) } : one(t);
      process.stdout.write(`${JSON.stringify(body)}\n`);
    } else if (this.flags.nBest > 1) {
      for (const h of t?.nBest ?? []) process.stdout.write(`${index} ||| ${h.text} ||| ${h.score.toFixed(4)}\n`);
      if (t === null) process.stdout.write(`${index} |||  ||| 0\n`);
    } else {
      process.stdout.write(`${t?.text ?? ''}\n`);
    }
  }
}

function floatOption(flag: string) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n))
      throw new InvalidArgumentError(`${flag} must be a number, got '${value}'`);
    return n;
  };
}
