/**
 * ONNX file sizes per output head for one architecture preset with Multi30k's real vocabularies:
 * how much of the output matrix each head ships. Sizes do not depend on training, so the models are
 * exported straight from their initialisation.
 *
 *   node --import tsx bench/export-sizes.ts [--preset small] [--src de] [--tgt en] [--heads a,b]
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';
import { getTokenizer } from '../core/text/tokenize.ts';
import { Vocabulary } from '../core/vocab.ts';
import { buildModel, headNames, resolveArchConfig } from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';
import { loadParallelCorpus } from '../train/data/corpus.ts';
import { multi30kDir } from '../train/data/paths.ts';

const { values: args } = parseArgs({
  options: {
    preset: { type: 'string', default: 'small' },
    src: { type: 'string', default: 'de' },
    tgt: { type: 'string', default: 'en' },
    heads: { type: 'string', default: headNames().join(',') },
    out: { type: 'string', default: 'reports/export-sizes' },
  },
});

await initBackend({ quiet: true });
const corpus = await loadParallelCorpus({ dataDir: multi30kDir(), src: args.src, tgt: args.tgt, kind: 'multi30k' });
const tok = getTokenizer('multi30k');
const vocab = (side: 'src' | 'tgt', lang: string) =>
  Vocabulary.build(
    corpus.train.map((p) => tok.tokenize(p[side], lang)),
    { minFreq: 2 },
  );
const sizes = { srcVocab: vocab('src', args.src!).size, tgtVocab: vocab('tgt', args.tgt!).size };
const config = resolveArchConfig('rnn-attn', args.preset!);
const d = config.output as number;
const matrixBytes = d * sizes.tgtVocab * 4;

interface Row {
  head: string;
  learnable: number;
  frozen: number;
  bytes: number;
  gzipBytes: number;
}
const rows: Row[] = [];
for (const head of args.heads!.split(',')) {
  const model = buildModel('rnn-attn', config, sizes, { name: head }, 1);
  const { encoder, decoder } = model.toOnnx();
  const files = [encoder.toBytes(), decoder.toBytes()];
  const counts = model.params.counts();
  rows.push({
    head,
    learnable: counts.learnable,
    frozen: counts.frozen,
    bytes: files.reduce((n, f) => n + f.length, 0),
    gzipBytes: files.reduce((n, f) => n + gzipSync(f).length, 0),
  });
  model.params.dispose();
}

const learned = rows.find((r) => r.head === 'learned');
const mb = (n: number) => (n / 1e6).toFixed(2);
const lines = [
  `rnn-attn/${args.preset}, Multi30k ${args.src}→${args.tgt} vocabularies (${sizes.srcVocab} / ${sizes.tgtVocab} words, min frequency 2), d = ${d}: d·|V|·4 = ${matrixBytes.toLocaleString('en')} bytes.`,
  '',
  '| head | learnable | frozen | ONNX bytes (encoder + decoder) | gzip | smaller than learned by | as a share of d·|V|·4 |',
  '|---|---:|---:|---:|---:|---:|---:|',
  ...rows.map((r) => {
    const saved = learned ? learned.bytes - r.bytes : 0;
    return `| ${r.head} | ${r.learnable.toLocaleString('en')} | ${r.frozen.toLocaleString('en')} | ${r.bytes.toLocaleString('en')} (${mb(r.bytes)} MB) | ${mb(r.gzipBytes)} MB | ${saved.toLocaleString('en')} | ${((saved / matrixBytes) * 100).toFixed(1)}% |`;
  }),
];
const outDir = resolve(args.out!);
await mkdir(outDir, { recursive: true });
await writeFile(join(outDir, 'export-sizes.json'), `${JSON.stringify({ sizes, d, rows }, null, 2)}\n`);
await writeFile(join(outDir, 'export-sizes.md'), `${lines.join('\n')}\n`);
process.stdout.write(`${lines.join('\n')}\n`);
