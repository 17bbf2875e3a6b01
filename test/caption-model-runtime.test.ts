/**
 * core/runtime/caption.ts: the isomorphic caption runtime on an exported (untrained) model built
 * in the test: options, batching, per-image callbacks, and errors at its boundary.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ort } from '../core/runtime/ort-node.ts';
import { SeededRandom } from '../core/random.ts';
import { CaptionRuntime, DEFAULT_CAPTION_MAX_LENGTH } from '../core/runtime/caption.ts';
import { modelCardSchema, parseModelCard, type ModelCard } from '../core/runtime/model-card.ts';
import { Vocabulary } from '../core/vocab.ts';
import { buildModel, resolveArchConfig } from '../models/index.ts';
import { initBackend } from '../train/backend/select.ts';

const SIZE = 32;
const IMAGE = {
  size: SIZE,
  mean: [0.5, 0.5, 0.5] as [number, number, number],
  std: [0.25, 0.25, 0.25] as [number, number, number],
};
const words = Vocabulary.build([['a', 'dog', 'runs', 'on', 'the', 'grass', 'red', 'ball']]);
let runtime: CaptionRuntime;
let card: ModelCard;
let graphs: { encoder: Uint8Array; decoder: Uint8Array };

function images(n: number, seed: number): Float32Array[] {
  const rng = new SeededRandom(seed, 'images');
  return Array.from({ length: n }, () => Float32Array.from({ length: 3 * SIZE * SIZE }, () => rng.normal()));
}

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  const model = buildModel(
    'show-attend-tell',
    resolveArchConfig('show-attend-tell', 'tiny'),
    { tgtVocab: words.size, image: { kind: 'pixels', size: SIZE } },
    { name: 'learned' },
    9,
  );
  const out = model.toOnnx();
  graphs = { encoder: out.encoder.toBytes(), decoder: out.decoder.toBytes() };
  card = modelCardSchema.parse({
    format: 'frost-model',
    version: 1,
    name: 'tiny-sat',
    task: 'caption',
    arch: 'show-attend-tell',
    preset: 'tiny',
    head: model.head.describe(),
    target: { lang: 'en', tokens: words.toJSON() },
    image: IMAGE,
    specials: { pad: 0, unk: 1, bos: 2, eos: 3 },
    tokenizer: 'caption',
    graphs: out.graphs,
    params: { ...model.params.counts(), generated: 0, byComponent: {} },
    files: {},
    config: {},
    created: new Date(0).toISOString(),
  });
  model.params.dispose();
  runtime = await CaptionRuntime.create({ ort, card, graphs });
});

after(async () => {
  await runtime.release();
});

describe('CaptionRuntime', () => {
  test('one caption per image, in order; batching and beam width change nothing but the search', async () => {
    assert.deepEqual(runtime.imageSpec, IMAGE);
    const ims = images(3, 1);
    const together = await runtime.caption(ims, { beam: 1, maxLength: 6 });
    assert.equal(together.length, 3);
    for (const [i, im] of ims.entries()) {
      // Scores may differ in the last float bits: the GEMMs of another batch size round differently.
      const [alone] = await runtime.caption([im], { beam: 1, maxLength: 6 });
      assert.deepEqual(alone.tokens, together[i].tokens);
      assert.ok(Math.abs(alone.score - together[i].score) < 1e-5);
    }
    for (const c of together) {
      assert.ok(c.tokens.length <= 6);
      assert.equal(c.text, c.tokens.join(' '));
      assert.ok(Number.isFinite(c.score));
    }
    // Beam search keeps the best of more candidates: never a lower score than greedy's.
    const beam = await runtime.caption(ims, { beam: 4, maxLength: 6 });
    beam.forEach((c, i) =>
      assert.ok(c.score >= together[i].score - 1e-6, `image ${i}: beam ${c.score} < greedy ${together[i].score}`),
    );
    assert.deepEqual(await runtime.caption([]), []);
  });

  test('defaults: beam 10, at most DEFAULT_CAPTION_MAX_LENGTH words', async () => {
    const [c] = await runtime.caption(images(1, 2));
    assert.ok(c.tokens.length <= DEFAULT_CAPTION_MAX_LENGTH);
    const [explicit] = await runtime.caption(images(1, 2), { beam: 10, maxLength: DEFAULT_CAPTION_MAX_LENGTH });
    assert.deepEqual(c, explicit);
  });

  test('captionEach reports each image once, with the caption caption() returns', async () => {
    const ims = images(4, 3);
    const done = new Map<number, string>();
    const out = await runtime.captionEach(ims, { beam: 2, maxLength: 5 }, { onDone: (i, c) => done.set(i, c.text) });
    assert.deepEqual([...done.keys()].sort(), [0, 1, 2, 3]);
    out.forEach((c, i) => assert.equal(done.get(i), c.text));
  });

  test('bad inputs are refused, naming the argument', async () => {
    await assert.rejects(
      runtime.caption([...images(1, 4), new Float32Array(10)]),
      /images\[1\] has 10 values; model 'tiny-sat' takes \[3, 32, 32\] = 3072/,
    );
    await assert.rejects(
      runtime.caption([new Array(3072).fill(0) as unknown as Float32Array]),
      /images\[0\] must be a Float32Array, got Array/,
    );
    await assert.rejects(runtime.caption(images(1, 5), { beam: 0 }), /'beam' must be a positive integer, got 0/);
    await assert.rejects(
      runtime.caption(images(1, 5), { maxLength: 1.5 }),
      /'maxLength' must be a positive integer, got 1.5/,
    );
  });

  test('a translation card is not a caption model, and a caption card needs its image spec', async () => {
    const translation = { ...card, task: 'translation' as const };
    await assert.rejects(
      CaptionRuntime.create({ ort, card: translation, graphs }),
      /'tiny-sat' is a translation model, not a caption model/,
    );
    const { image: _image, ...noImage } = card;
    assert.throws(
      () => parseModelCard(JSON.stringify(noImage), 'card.json'),
      /card\.json: not a valid model card \(image: a caption model's card needs 'image'/,
    );
  });
});
