/**
 * The Hugging Face layout (`frost export --hf`, export/hf/) read by the real client: a tiny Transformer on a
 * joint BPE vocabulary, with a frozen head and with a shared one, exported with --hf and loaded by
 * transformers.js's `pipeline('translation', dir)` from the local folder (no network), translates the toy test
 * sentences exactly as frost's own runtime does greedily. Models that cannot take the layout are refused.
 * The trained and exported models are cached fixtures (toy-fixtures.ts): the layout is written from them here.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { AutoModelForSeq2SeqLM, AutoTokenizer, env, pipeline, Tensor } from '@huggingface/transformers';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { parseModelCard } from '../core/runtime/model-card.ts';
import { NORMALIZATION } from '../core/subword/normalize.ts';
import { SPECIALS } from '../core/vocab.ts';
import { hfRefusal, writeHfLayout } from '../export/hf/hf-layout.ts';
import { initBackend } from '../train/backend/select.ts';
import { browserSkipReason } from './helpers/browser.ts';
import { frostInProcess } from './helpers/frost-in-process.ts';
import { smallDisk } from './helpers/small-disk.ts';
import { cachedToyModel, cachedToyRun } from './helpers/toy-fixtures.ts';
import { RNN_ATTN_FIXED_UNIFORM_SHORT } from './helpers/toy-specs.ts';
import { openTransformersPage } from './helpers/transformers-page.ts';

const SENTENCES = 12;
const HEADS = ['fixed-uniform', 'tied'];

env.allowRemoteModels = false;
env.allowLocalModels = true;

let dir: string;
before(async () => {
  // Should a cached run or its export need building, tfjs runs on wasm, as it trained here before.
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-hf-export-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Exported {
  sources: string[];
  /** frost's greedy translations (`translate --beam 1`) through its own runtime. */
  expected: string[];
}
const exported = new Map<string, Exported>();

/** The part of an onnxruntime session transformers.js's model holds that the test runs by hand. */
interface OrtSession {
  inputMetadata: Array<{ name: string; shape: Array<string | number> }>;
  run(feeds: Record<string, unknown>): Promise<Record<string, { data: unknown; dims: number[] }>>;
}

/** A tiny Transformer with `head` trained on a joint BPE vocabulary and exported (a cached fixture, read-only). */
const hfModel = (head: string) =>
  cachedToyModel(
    {
      head,
      corpus: { seed: 1, train: 600, val: 8, test: SENTENCES },
      config: {
        arch: 'transformer',
        epochs: 3,
        optim: { learningRate: 3e-3 },
        tokenizer: 'sentencepiece',
        vocab: { kind: 'bpe', size: 420, joint: true },
      },
    },
    { decoderCache: 'concat' },
  );

/**
 * A tiny Transformer with `head` trained on a joint BPE vocabulary and exported (cached, read-only), written
 * as the Hugging Face layout to `dir/<head>/hf`.
 */
async function exportWithHead(head: string): Promise<Exported> {
  const root = join(dir, head);
  const { dataDir, modelDir } = await hfModel(head);
  await writeHfLayout(modelDir, join(root, 'hf'));
  // Frozen heads keep their matrix regenerated in the graph: the layout is as small as frost's own export.
  const onnxBytes = (folder: string) =>
    readdirSync(folder)
      .filter((f) => f.endsWith('.onnx'))
      .reduce((sum, f) => sum + statSync(join(folder, f)).size, 0);
  const [frostBytes, hfBytes] = [onnxBytes(modelDir), onnxBytes(join(root, 'hf', 'onnx'))];
  assert.ok(
    hfBytes <= 1.02 * frostBytes,
    `${head}: ${hfBytes} bytes of ONNX in the layout against frost's ${frostBytes}`,
  );
  const sources = (await readFile(join(dataDir, 'test.src'), 'utf8')).trim().split('\n');
  const runtime = await loadModelDir(modelDir);
  const expected = (await runtime.translate(sources, { beam: 1 })).map((t) => t.text);
  await runtime.release();
  assert.ok(
    expected.some((t) => t.length > 0),
    'every translation is empty: nothing would be compared',
  );
  return { sources, expected };
}

/** frost's cap, 2 · source pieces + 10 tokens and then a forced </s>, as transformers.js's max_new_tokens. */
function frostCap(pieces: number): number {
  return 2 * pieces + 11;
}

for (const head of HEADS) {
  test(`head '${head}': transformers.js in Node translates greedily as frost does`, { timeout: 300_000 }, async () => {
    const { sources, expected } = await exportWithHead(head);
    exported.set(head, { sources, expected });
    env.localModelPath = dir;
    const translate = await pipeline('translation', `${head}/hf`, { dtype: 'fp32' });
    const got: string[] = [];
    for (const s of sources) {
      const maxNewTokens = frostCap(translate.tokenizer.encode(s).length);
      const [out] = (await translate(s, { max_new_tokens: maxNewTokens })) as Array<{ translation_text: string }>;
      got.push(out!.translation_text);
    }
    await translate.dispose();
    assert.deepEqual(got, expected);
  });
}

test('the first step ignores the placeholder decoder caches Optimum feeds (length 1 rather than 0)', async (t) => {
  if (!exported.has(HEADS[0]!)) return t.skip('the Node test did not export the model');
  env.localModelPath = dir;
  const model = await AutoModelForSeq2SeqLM.from_pretrained(`${HEADS[0]}/hf`, { dtype: 'fp32' });
  const sessions = (model as unknown as { sessions: Record<string, OrtSession> }).sessions;
  const ids = (values: number[]) =>
    new Tensor(
      'int64',
      BigInt64Array.from(values, (v) => BigInt(v)),
      [1, values.length],
    ).ort_tensor;
  const encoded = await sessions.model!.run({ input_ids: ids([5, 6, 7]), attention_mask: ids([1, 1, 1]) });
  const decoder = sessions.decoder_model_merged!;
  const firstStep = async (pastLength: number) => {
    const feeds: Record<string, unknown> = {
      input_ids: ids([SPECIALS.bos.id]),
      encoder_attention_mask: ids([1, 1, 1]),
      encoder_hidden_states: encoded.last_hidden_state,
      use_cache_branch: new Tensor('bool', [false], [1]).ort_tensor,
    };
    for (const meta of decoder.inputMetadata) {
      if (!meta.name.startsWith('past_key_values.')) continue;
      const [, heads, , size] = meta.shape as [string, number, string, number];
      const values = new Float32Array(heads * pastLength * size).fill(1);
      feeds[meta.name] = new Tensor('float32', values, [1, heads, pastLength, size]).ort_tensor;
    }
    const out = await decoder.run(feeds);
    return { logits: Array.from(out.logits!.data as Float32Array), cache: out['present.0.decoder.key']!.dims };
  };
  const empty = await firstStep(0);
  const placeholder = await firstStep(1);
  await model.dispose();
  assert.deepEqual(empty.cache, [1, 4, 1, 16]);
  assert.deepEqual(placeholder, empty);
});

describe(
  "the same folders in Chromium, through transformers.js's browser build",
  { skip: browserSkipReason(), timeout: 300_000 },
  () => {
    test('each model translates as frost does; every file comes from this machine', async (t) => {
      if (exported.size < HEADS.length) return t.skip('the Node tests did not export every model');
      const page = await openTransformersPage(dir);
      try {
        for (const [head, { sources, expected }] of exported) {
          const tokenizer = await AutoTokenizer.from_pretrained(`${head}/hf`);
          const items = sources.map((text) => ({ text, maxNewTokens: frostCap(tokenizer.encode(text).length) }));
          assert.deepEqual(await page.translateAll(`${head}/hf`, items), expected, head);
        }
        // A blob: URL (the wasm factory transformers.js loads) names the page's own origin.
        const hosts = new Set(page.requested.map((u) => new URL(u.replace(/^blob:/, '')).host));
        assert.deepEqual([...hosts], [new URL(page.requested[0]!).host]);
        assert.ok(
          page.requested.some((u) => u.endsWith('.wasm')),
          'no wasm file was requested',
        );
      } finally {
        await page.close();
      }
    });
  },
);

test('frost export --hf on an rnn-attn run: one line that says why, and no Hugging Face folder', async () => {
  // Any trained rnn-attn run (shared, read-only: it is refused before anything is written).
  const { runDir } = await cachedToyRun(RNN_ATTN_FIXED_UNIFORM_SHORT);
  const hfDir = join(dir, 'rnn', 'hf');
  const out = join(dir, 'rnn', 'out');
  const run = await frostInProcess(['export', runDir, '--out', out, '--hf', hfDir, '--checkpoint', 'last', '--quiet']);
  const lines = run.stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('tfjs backend:'));
  assert.equal(run.code, 1, run.stderr);
  assert.equal(lines.length, 1, run.stderr);
  assert.match(lines[0]!, /--hf: architecture 'rnn-attn' cannot take it .*key\/value caches/);
  assert.equal(existsSync(hfDir), false);
});

test('an architecture without a key/value cache, or a vocabulary tokenizer.json cannot express, is refused', async () => {
  const card = parseModelCard(
    JSON.stringify({
      format: 'frost-model',
      version: 1,
      name: 'x',
      task: 'translation',
      arch: 'rnn-attn',
      preset: 'tiny',
      head: { name: 'learned' },
      target: { lang: 'en', tokens: ['<pad>', '<unk>', '<s>', '</s>'] },
      specials: { pad: 0, unk: 1, bos: 2, eos: 3 },
      tokenizer: 'whitespace',
      graphs: {
        encoder: { file: 'encoder.onnx', inputs: [], outputs: [] },
        decoder: { file: 'decoder.onnx', token: 'prev_token', state: [], memory: [], logProbs: 'log_probs' },
      },
      params: { learnable: 0, frozen: 0, generated: 0, byComponent: {} },
      files: {},
      config: {},
      created: '2026-01-01',
    }),
    'card',
  );
  assert.match(hfRefusal(card)!, /^--hf: architecture 'rnn-attn' cannot take it .*key\/value caches/);
  const words = { ...card, arch: 'transformer' };
  assert.match(hfRefusal(words)!, /tokenizer 'whitespace' cannot be written as tokenizer.json/);
  const separate = {
    ...words,
    tokenizer: 'sentencepiece',
    subword: { kind: 'bpe' as const, joint: false, vocabSize: 300, files: {}, normalization: NORMALIZATION },
  };
  assert.match(hfRefusal(separate)!, /separate source and target vocabularies .* one tokenizer for both/);
  assert.equal(hfRefusal({ ...separate, subword: { ...separate.subword, joint: true } }), undefined);
  // An imported fairseq model's dictionary and BPE codes have no tokenizer.json form here.
  assert.match(
    hfRefusal({ ...words, tokenizer: 'fairseq' })!,
    /tokenizer 'fairseq' cannot be written as tokenizer.json/,
  );
  // An imported Marian model's two SentencePiece models are written over its one vocabulary.
  const marian = { ...words, tokenizer: 'marian', source: { lang: 'de', tokens: words.target.tokens } };
  assert.equal(hfRefusal(marian), undefined);
  const twoVocabularies = { ...marian, source: { lang: 'de', tokens: [...words.target.tokens, 'x'] } };
  assert.match(hfRefusal(twoVocabularies)!, /the source and target vocabularies differ/);
});

describe('--hf writes its folder as --out is written (issue #51, item 7)', () => {
  const readOnly = smallDisk(() => dir, 'read-only', '1m');

  test("a folder that is not a frost --hf export is refused, and the user's files are kept", async () => {
    const { modelDir } = await hfModel('tied');
    const mine = join(dir, 'mine');
    await mkdir(join(mine, 'onnx'), { recursive: true });
    await writeFile(join(mine, 'config.json'), '{"model_type": "mine"}');
    await writeFile(join(mine, 'notes.txt'), 'mine');
    await assert.rejects(writeHfLayout(modelDir, mine), /^Error: --hf .*mine: it holds notes\.txt, which is not part/);
    await rm(join(mine, 'notes.txt'));
    await assert.rejects(writeHfLayout(modelDir, mine), /mine: its config\.json was not written by frost/);
    assert.equal(await readFile(join(mine, 'config.json'), 'utf8'), '{"model_type": "mine"}');
  });

  test('a previous --hf export is replaced whole: no stray file of another version survives', async () => {
    const { modelDir } = await hfModel('tied');
    const out = join(dir, 'again');
    const files = await writeHfLayout(modelDir, out);
    await writeFile(join(out, 'onnx', 'decoder_with_past_model.onnx'), 'stale');
    assert.deepEqual(await writeHfLayout(modelDir, out), files);
    assert.deepEqual(readdirSync(join(out, 'onnx')).sort(), ['decoder_model_merged.onnx', 'encoder_model.onnx']);
    assert.deepEqual(
      readdirSync(dir).filter((n) => n.startsWith('again')),
      ['again'],
      'no temporary folder left',
    );
  });

  test('a read-only folder: the error names the path, and nothing is written', async (t) => {
    if (readOnly.skipped(t)) return;
    const { modelDir } = await hfModel('tied');
    execFileSync('mount', ['-o', 'remount,ro', readOnly.path]);
    try {
      const out = join(readOnly.path, 'hf');
      await assert.rejects(writeHfLayout(modelDir, out), (err: Error) => {
        assert.match(err.message, new RegExp(`^cannot write ${out}\\.tmp-\\d+: EROFS`));
        return true;
      });
      assert.deepEqual(readdirSync(readOnly.path), []);
    } finally {
      execFileSync('mount', ['-o', 'remount,rw', readOnly.path]);
    }
  });
});
