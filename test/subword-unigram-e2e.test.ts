/**
 * `--vocab unigram` through the whole system, as a user runs it: `frost train` learns a joint unigram model on
 * the toy corpus (a few seconds of training), `frost export` copies the `.model` beside the graphs with
 * `subword.kind: unigram` in the card, and `frost translate`, the runtime and `frost serve`'s decode threads
 * tokenise with it. A `.model` of another type is refused at load with its path. Each command is the CLI's own,
 * run in this process (frost-in-process.ts); the trained run is a cached fixture (cli-train-fixtures.ts), made
 * by that same `frost train` once per change of the code.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadModelDir, readModelCard } from '../core/runtime/load-node.ts';
import { decodeModelProto, ModelType } from '../core/subword/sentencepiece-proto.ts';
import { SubwordModel } from '../core/subword/subword-model.ts';
import { startServer } from '../serve/server.ts';
import { makeToyCorpus } from '../train/data/toy-corpus.ts';
import { learnSubwords, readSubwords, runTokenizer } from '../train/subwords.ts';
import { cachedCliTrainRun, DATA_DIR, RUN_DIR } from './helpers/cli-train-fixtures.ts';
import { frostInProcess, type FrostRun } from './helpers/frost-in-process.ts';
import { serverTranslation } from './helpers/translate-request.ts';

/** `frost ...args`, which must exit 0. */
async function frost(args: string[]): Promise<FrostRun> {
  const run = await frostInProcess(args);
  assert.equal(run.code, 0, `frost ${args.join(' ')}:\n${run.stderr}`);
  return run;
}
const HOSTILE = [
  'emoji 😀🐕‍🦺 and ZWJ',
  '漢字とひらがな 한국어',
  'שלום مرحبا',
  'e\u0301 Z\u0336a\u0334',
  'NUL \u0000 \uD800',
];

let dir: string;
let dataDir: string;
let runDir: string;
let modelDir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'frost-unigram-e2e-'));
  modelDir = join(dir, 'model');
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('per-language unigram models: one .model per language, read back and checked against the run', async () => {
  const runFolder = join(dir, 'per-language');
  await mkdir(runFolder);
  const corpus = makeToyCorpus({ seed: 4, train: 400, val: 1, test: 1, lexiconScale: 0.2 });
  const vocab = { kind: 'unigram' as const, size: 300, joint: false, minFreq: 1, maskUnseen: true };
  const sentences = { src: corpus.train.map((p) => p.src), tgt: corpus.train.map((p) => p.tgt) };
  const { tokenizer, vocabs } = await learnSubwords(vocab, runFolder, sentences);
  for (const lang of ['src', 'tgt']) {
    const bytes = await readFile(join(runFolder, `subword.${lang}.model`));
    assert.equal(decodeModelProto(bytes).trainer_spec.model_type, ModelType.UNIGRAM, lang);
    assert.equal(vocabs[lang]!.size, 300, lang);
    assert.equal(tokenizer.model(lang).kind, 'unigram');
  }
  assert.notDeepEqual(vocabs.src!.tokens, vocabs.tgt!.tokens, 'each language learns its own pieces');
  const text = { tokenizer: 'sentencepiece', vocab };
  const again = await runTokenizer(text, runFolder, vocabs);
  assert.deepEqual(again.tokenize(sentences.tgt[0]!, 'tgt'), tokenizer.tokenize(sentences.tgt[0]!, 'tgt'));
  const subwords = await readSubwords(text, runFolder, ['src', 'tgt']);
  assert.equal(subwords?.spec.kind, 'unigram');
  assert.deepEqual(Object.keys(subwords?.files ?? {}).sort(), ['subword.src.model', 'subword.tgt.model']);
  // a run config that says bpe does not read these files as its own
  await assert.rejects(
    runTokenizer({ ...text, vocab: { ...vocab, kind: 'bpe' } }, runFolder, vocabs),
    (err: Error) =>
      err.message.startsWith(join(runFolder, 'subword.src.model')) && /run config says bpe/.test(err.message),
  );
});

describe('frost train --vocab unigram, export, translate', () => {
  test('frost train learns a joint unigram model and trains on its pieces', async () => {
    // The run is shared and read-only: export only reads it.
    ({ dataDir, runDir } = await cachedCliTrainRun('unigram-joint', { seed: 1, train: 1500, val: 40, test: 40 }, [
      'train',
      '--data',
      DATA_DIR,
      '--arch',
      'rnn-attn',
      '--head',
      'tied',
      '--preset',
      'tiny',
      '--vocab',
      'unigram',
      '--vocab-size',
      '400',
      '--joint-vocab',
      '--epochs',
      '2',
      '--lr',
      '5e-3',
      '--backend',
      'wasm',
      '--out',
      RUN_DIR,
      '--quiet',
    ]));
    const config = JSON.parse(await readFile(join(runDir, 'config.json'), 'utf8')) as {
      tokenizer: string;
      vocab: { kind: string; size: number; joint: boolean };
    };
    assert.equal(config.tokenizer, 'sentencepiece');
    assert.deepEqual([config.vocab.kind, config.vocab.size, config.vocab.joint], ['unigram', 400, true]);
    const bytes = await readFile(join(runDir, 'subword.model'));
    assert.equal(decodeModelProto(bytes).trainer_spec.model_type, ModelType.UNIGRAM);
    const model = SubwordModel.fromBytes(bytes, 'subword.model');
    assert.equal(model.size, 400);
    const vocab = JSON.parse(await readFile(join(runDir, 'vocab.src.json'), 'utf8')) as { tokens: string[] };
    assert.deepEqual(vocab.tokens, model.tokens, 'the vocabulary is the model pieces');
  });

  test('frost export copies the .model and the card says subword.kind unigram', async () => {
    await frost(['export', runDir, '--out', modelDir, '--quiet']);
    const card = await readModelCard(modelDir);
    assert.equal(card.tokenizer, 'sentencepiece');
    assert.equal(card.subword?.kind, 'unigram');
    assert.deepEqual(card.subword?.files, { src: 'subword.model', tgt: 'subword.model' });
    assert.deepEqual(await readFile(join(modelDir, 'subword.model')), await readFile(join(runDir, 'subword.model')));
  });

  test('frost translate prints what the runtime gives: detokenised, no ▁, no <unk>, hostile text included', async () => {
    const src = (await readFile(join(dataDir, 'test.src'), 'utf8')).trim().split('\n').slice(0, 3);
    const inputs = [...src, ...HOSTILE.slice(0, 2)];
    const { stdout } = await frost(['translate', modelDir, '--beam', '2', ...inputs]);
    const runtime = await loadModelDir(modelDir);
    try {
      const expected = await runtime.translate(inputs, { beam: 2 });
      assert.deepEqual(
        stdout.trimEnd().split('\n'),
        expected.map((t) => t.text),
      );
      for (const t of await runtime.translate(HOSTILE, { beam: 2 })) {
        assert.ok(!t.tokens.includes('<unk>') && !t.text.includes('<unk>') && !t.text.includes('▁'), t.text);
      }
    } finally {
      await runtime.release();
    }
  });

  test('frost serve (worker threads) answers hostile text as valid UTF-8, equal to the runtime', async () => {
    const runtime = await loadModelDir(modelDir);
    const expected = await runtime.translate(HOSTILE, { beam: 2 });
    await runtime.release();
    const server = await startServer({ modelsDir: modelDir, port: 0, workers: 1, log: () => {} });
    try {
      for (const [i, text] of HOSTILE.entries())
        assert.equal(await serverTranslation(server.url, undefined, text, 2), expected[i]!.text, text);
    } finally {
      await server.close();
    }
  });

  test('a .model of another type with the same pieces is refused at load with its path', async () => {
    const file = join(modelDir, 'subword.model');
    const good = await readFile(file);
    const unigram = SubwordModel.fromBytes(good, file);
    try {
      await writeFile(file, SubwordModel.fromPieces(unigram.pieces, 'bpe', 'bpe').toBytes());
      await assert.rejects(loadModelDir(modelDir), (err: Error) =>
        err.message.startsWith(`${file}: is a bpe model, but its card or run config says unigram`),
      );
    } finally {
      await writeFile(file, good);
    }
    await (await loadModelDir(modelDir)).release();
  });
});
