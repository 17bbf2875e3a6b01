/**
 * The Hugging Face layout (`frost export --hf`, export/hf/) read by the real client: a tiny Transformer on a
 * joint BPE vocabulary, with a frozen head and with a shared one, exported with --hf and loaded by
 * transformers.js's `pipeline('translation', dir)` from the local folder (no network), translates the toy test
 * sentences exactly as frost's own runtime does greedily. Models that cannot take the layout are refused.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { env, pipeline } from '@huggingface/transformers';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { parseModelCard } from '../core/runtime/model-card.ts';
import { NORMALIZATION } from '../core/subword/normalize.ts';
import { hfRefusal, writeHfLayout } from '../export/hf/hf-layout.ts';
import { trainAndExportToyRun } from './helpers/toy-run.ts';

const SENTENCES = 12;
const HEADS = ['fixed-uniform', 'tied'];

env.allowRemoteModels = false;
env.allowLocalModels = true;

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'frost-hf-export-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

for (const head of HEADS) {
  describe(`a Transformer with head '${head}' in the Hugging Face layout`, { timeout: 300_000 }, () => {
    test('transformers.js translates greedily as frost does', async () => {
      const root = join(dir, head);
      const { modelDir } = await trainAndExportToyRun(root, 'toy', {
        head,
        corpus: { seed: 1, train: 600, val: 8, test: SENTENCES },
        config: {
          arch: 'transformer',
          epochs: 3,
          optim: { learningRate: 3e-3 },
          tokenizer: 'sentencepiece',
          vocab: { kind: 'bpe', size: 420, joint: true },
        },
      });
      const hfDir = join(root, 'hf');
      await writeHfLayout(modelDir, hfDir);
      const sources = (await readFile(join(root, 'toy', 'test.src'), 'utf8')).trim().split('\n');
      const runtime = await loadModelDir(modelDir);
      const expected = (await runtime.translate(sources, { beam: 1 })).map((t) => t.text);
      await runtime.release();

      env.localModelPath = root;
      const translate = await pipeline('translation', 'hf', { dtype: 'fp32' });
      const got: string[] = [];
      for (const s of sources) {
        // frost's cap, 2 · source pieces + 10 tokens and then a forced </s>, as generation options.
        const maxNewTokens = 2 * translate.tokenizer.encode(s).length + 11;
        const [out] = (await translate(s, { max_new_tokens: maxNewTokens })) as Array<{ translation_text: string }>;
        got.push(out!.translation_text);
      }
      await translate.dispose();
      assert.deepEqual(got, expected);
      assert.ok(
        expected.some((t) => t.length > 0),
        'every translation is empty: nothing was compared',
      );
    });
  });
}

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
});
