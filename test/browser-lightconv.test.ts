/**
 * A DynamicConv model in the browser: its decoder state is a window of the last K − 1 convolution inputs per layer
 * and the position, which beam search reorders like any recurrent state. In headless Chromium with the page's
 * onnxruntime-web build, the page (through its UI) loads the model from `frost serve` and translates, with beam
 * search, word for word as the server does. (The graphs' step-by-step equality between onnxruntime-web and -node is
 * test/lightconv-export.test.ts's.)
 *
 * Skipped, with the reason, where Chromium is missing.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { ModelCard } from '../core/runtime/model-card.ts';
import { initBackend } from '../train/backend/select.ts';
import { assertPageTranslatesAsServer, browserSkipReason, servedPageFixture } from './helpers/browser.ts';
import { copyFixture } from './helpers/cached-fixture.ts';
import { cachedToyModel } from './helpers/toy-fixtures.ts';

const MODEL = 'toy-dynamicconv';

describe(
  'a DynamicConv model with convolution windows, in Chromium',
  { skip: browserSkipReason(), timeout: 180_000 },
  () => {
    let card: ModelCard;
    const web = servedPageFixture('frost-web-dynamicconv-', async (root) => {
      // Should the cached run or its export need building, tfjs runs on wasm, as it trained here before.
      await initBackend({ prefer: 'wasm', quiet: true });
      const toy = await cachedToyModel(
        {
          head: 'tied',
          corpus: { seed: 1, train: 600, val: 8, test: 8 },
          config: { arch: 'dynamicconv', epochs: 3, optim: { learningRate: 3e-3 } },
        },
        { name: MODEL },
      );
      ({ card } = toy);
      // Copies: the cached folders are shared, and the page's fixture serves its own.
      await copyFixture(toy.modelsDir, join(root, 'models'));
      await copyFixture(toy.dataDir, join(root, 'toy'));
    });

    test('the page loads it through its UI and translates, with beam search, as POST /v1/translate does', async () => {
      assert.equal(card.arch, 'dynamicconv');
      assert.ok(card.graphs.decoder.state.includes('conv_window_0'), card.graphs.decoder.state.join(', '));
      await assertPageTranslatesAsServer(web, MODEL);
    });
  },
);
