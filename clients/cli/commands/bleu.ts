import { readFile } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { Option, type Command } from 'commander';
import {
  bleuSignature,
  bleuTokenizers,
  corpusBleu,
  sentenceBleu,
  type BleuOptions,
  type BleuScore,
  type BleuTokenizerName,
} from '../../../core/metrics/bleu.ts';

interface BleuCommandOptions {
  tokenize: BleuTokenizerName;
  lowercase?: boolean;
  sentence?: boolean;
  json?: boolean;
}

/**
 * `frost bleu REF [REF...] < hyp`: sacreBLEU-compatible BLEU of detokenised hypotheses on stdin against
 * one or more reference files (one segment per line, gzip allowed). Each REF file is one more
 * reference for every segment, like sacreBLEU's `sacrebleu REF1 REF2 < hyp`.
 *
 * Porting note: unlike sacreBLEU's CLI, stdin holds one system only (no tab-separated systems), and the
 * text output has no signature; `--json` carries it.
 */
export function registerBleu(program: Command): void {
  program
    .command('bleu')
    .description('score hypotheses on stdin against reference files with sacreBLEU-compatible BLEU')
    .argument('<ref...>', 'reference files, one segment per line (.gz is fine); several files = several references')
    .addOption(
      new Option('-t, --tokenize <name>', 'tokenizer applied before counting n-grams')
        .choices(Object.keys(bleuTokenizers))
        .default('13a'),
    )
    .option('-l, --lowercase', 'case-insensitive BLEU')
    .option('--sentence', 'sentence BLEU for each line (effective order, exp smoothing) instead of corpus BLEU')
    .option('--json', 'print JSON (one object per line with --sentence)')
    .addHelpText(
      'after',
      '\nExample:\n  frost bleu newstest.de < system.de\n  frost bleu --json ref1.de ref2.de < system.de',
    )
    .action(async (refFiles: string[], options: BleuCommandOptions) => {
      if (process.stdin.isTTY) {
        throw new Error('bleu: no hypotheses on stdin; pipe them in, e.g. frost bleu ref.txt < hyp.txt');
      }
      const [hypotheses, ...references] = await Promise.all([
        readStdin().then(splitLines),
        ...refFiles.map((file) => readText(file).then(splitLines)),
      ]);
      checkLineCounts(hypotheses!, references, refFiles);

      const bleuOptions: BleuOptions = { tokenize: options.tokenize, lowercase: options.lowercase ?? false };
      const out: string[] = [];
      if (options.sentence) {
        const signature = bleuSignature(refFiles.length, bleuOptions, true);
        hypotheses!.forEach((hyp, i) => {
          const score = sentenceBleu(
            hyp,
            references.map((ref) => ref[i]!),
            bleuOptions,
          );
          out.push(options.json ? JSON.stringify(toJson(score, signature)) : score.format());
        });
      } else {
        const score = corpusBleu(hypotheses!, references, bleuOptions);
        const signature = bleuSignature(refFiles.length, bleuOptions);
        out.push(options.json ? JSON.stringify(toJson(score, signature), null, 1) : score.format());
      }
      process.stdout.write(out.length ? `${out.join('\n')}\n` : '');
    });
}

/** Reads a text file, gunzipping it when it starts with the gzip magic bytes. */
async function readText(file: string): Promise<string> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (err) {
    throw new Error(`bleu: cannot read reference ${file}: ${(err as Error).message}`, { cause: err });
  }
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) bytes = gunzipSync(bytes);
  return bytes.toString('utf8');
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Lines as sacreBLEU reads them: split on \n only; a final newline ends the last line, adds none. */
function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return lines;
}

function checkLineCounts(
  hypotheses: readonly string[],
  references: readonly string[][],
  files: readonly string[],
): void {
  const mismatched = files.flatMap((file, k) =>
    references[k]!.length === hypotheses.length ? [] : [`${file} has ${references[k]!.length}`],
  );
  if (mismatched.length === 0) return;
  const detail = mismatched.join(', ');
  throw new Error(
    `bleu: line counts differ: the hypotheses on stdin have ${hypotheses.length} lines, but ${detail}; ` +
      'every reference file needs one line per hypothesis',
  );
}

function toJson(score: BleuScore, signature: string) {
  return {
    name: 'BLEU',
    score: score.score,
    signature,
    verbose_score: score.format().replace(/^BLEU = \S+ /, ''),
    counts: score.counts,
    totals: score.totals,
    precisions: score.precisions,
    bp: score.bp,
    ratio: score.ratio,
    hyp_len: score.sysLen,
    ref_len: score.refLen,
  };
}
