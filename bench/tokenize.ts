/**
 * Subword speed on Multi30k (issue #14's targets: encode all 29,000 training pairs in under 2 s, learn an
 * 8,000-piece model in under 30 s). Measures frost's trainers and encoders for both model types (BPE and
 * unigram), the Moses word tokeniser for comparison, and SentencePiece's own command-line tools on the same text
 * when they are installed. Each figure is the median of `--repeats` runs; encoding starts from a fresh model
 * each time (empty word cache).
 *
 *   npm run bench:tokenize
 *   npm run bench:tokenize -- --vocab-size 16000 --repeats 5
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { trainBpe } from '../core/subword/bpe-trainer.ts';
import { SubwordModel } from '../core/subword/subword-model.ts';
import type { SubwordKind } from '../core/subword/subword-spec.ts';
import { trainUnigram } from '../core/subword/unigram-trainer.ts';
import { tokenize } from '../core/text/tokenize.ts';
import { readGzipLines } from '../train/data/multi30k.ts';
import { multi30kDir } from '../train/data/paths.ts';

const { values: args } = parseArgs({
  options: {
    'vocab-size': { type: 'string', default: '8000' },
    repeats: { type: 'string', default: '3' },
    src: { type: 'string', default: 'de' },
    tgt: { type: 'string', default: 'en' },
  },
});
const vocabSize = Number(args['vocab-size']);
const repeats = Number(args.repeats);
const dir = multi30kDir();
const [src, tgt] = await Promise.all([args.src, args.tgt].map((l) => readGzipLines(join(dir, `train.${l}.gz`))));
const joint = [...src!, ...tgt!];

function median(fn: () => void): number {
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    fn();
    times.push(performance.now() - t0);
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)]! / 1000;
}

const TRAINERS: Record<
  SubwordKind,
  (text: readonly string[], options: { vocabSize: number }) => { model: SubwordModel }
> = { bpe: trainBpe, unigram: trainUnigram };
const rows: [string, number, string][] = [];
const ratios: string[] = [];
const models = new Map<SubwordKind, Uint8Array>();
for (const kind of ['bpe', 'unigram'] as const) {
  let model: SubwordModel | undefined;
  const learn = median(() => (model = TRAINERS[kind](joint, { vocabSize }).model));
  rows.push([`learn a joint ${vocabSize}-piece ${kind} model (frost)`, learn, 'target < 30 s']);
  const bytes = model!.toBytes();
  models.set(kind, bytes);
  let pieces = 0;
  const encode = median(() => {
    const fresh = SubwordModel.fromBytes(bytes, 'bench');
    pieces = 0;
    for (const line of joint) pieces += fresh.encode(line).length;
  });
  rows.push([
    `encode ${src!.length} pairs (${joint.length} sentences, ${pieces} ${kind} pieces) (frost)`,
    encode,
    'target < 2 s',
  ]);
  ratios.push(
    `${kind}: learn ${(learn / 30).toFixed(3)} of its target, encode ${(encode / 2).toFixed(3)} of its target`,
  );
}
let words = 0;
const moses = median(() => {
  words = 0;
  src!.forEach((l) => (words += tokenize(l, args.src).length));
  tgt!.forEach((l) => (words += tokenize(l, args.tgt).length));
});
rows.push([`Moses word tokeniser, same sentences (${words} words) (frost)`, moses, 'for comparison']);

if (spawnSync('spm_train', ['--help'], { stdio: 'ignore' }).error === undefined) {
  const tmp = mkdtempSync(join(tmpdir(), 'bench-tokenize-'));
  try {
    const input = join(tmp, 'train.txt');
    writeFileSync(input, joint.map((l) => `${l}\n`).join(''));
    for (const [kind, bytes] of models) {
      const modelPath = join(tmp, `frost-${kind}.model`);
      writeFileSync(modelPath, bytes);
      const spmTrain = median(() =>
        execFileSync(
          'spm_train',
          [
            `--input=${input}`,
            `--model_prefix=${join(tmp, `spm-${kind}`)}`,
            `--model_type=${kind}`,
            `--vocab_size=${vocabSize}`,
            '--normalization_rule_name=identity',
            '--byte_fallback=true',
            '--character_coverage=1.0',
            '--minloglevel=2',
            '--pad_id=0',
            '--unk_id=1',
            '--bos_id=2',
            '--eos_id=3',
            '--num_threads=1',
          ],
          { stdio: 'ignore' },
        ),
      );
      rows.push([`learn the same ${kind} model with spm_train (1 thread)`, spmTrain, 'reference']);
      const spmEncode = median(() =>
        execFileSync('spm_encode', [`--model=${modelPath}`, `--input=${input}`, '--output_format=id'], {
          stdio: ['ignore', 'ignore', 'ignore'],
        }),
      );
      rows.push([
        `encode the same sentences with spm_encode (frost's ${kind} model, process start included)`,
        spmEncode,
        'reference',
      ]);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
} else {
  console.log('spm_train not found: SentencePiece reference rows skipped (apt-get install sentencepiece)');
}

console.log(`Multi30k train ${args.src}-${args.tgt}, median of ${repeats}, node ${process.version}\n`);
const width = Math.max(...rows.map(([name]) => name.length));
for (const [name, seconds, note] of rows)
  console.log(`${name.padEnd(width)}  ${seconds.toFixed(3).padStart(7)} s  ${note}`);
console.log(`\nratios: ${ratios.join('; ')}`);
