/**
 * Subword models in the web page (headless Chromium), BPE and unigram: the page fetches the card's
 * `subword.model` from the server, tokenises and detokenises with the same core/subword code, and its
 * translations equal the server's word for word, for text in any script. Skipped, with the reason, where
 * Chromium is missing.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { browserSkipReason, loadModelInPage, openPage, servedPageFixture, translateInPage } from './helpers/browser.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';
import { serverTranslation } from './helpers/translate-request.ts';

const MODELS = [
  ['tiny-bpe', 'bpe'],
  ['tiny-unigram', 'unigram'],
] as const;
const BEAM = 3;
const SENTENCES = ['The Red Dog sits on a big House .', 'a small cat 😀 漢字 and שלום', 'Zebra e\u0301 \u0000 NUL'];

describe('a subword model in the web page (Chromium)', { skip: browserSkipReason(), timeout: 180_000 }, () => {
  const web = servedPageFixture('frost-web-subword-', async (root) => {
    for (const [name, kind] of MODELS) await writeTinyModelDir(join(root, 'models', name), { name, subword: kind });
  });

  for (const [model, kind] of MODELS) {
    test(`${kind}: translates in the page exactly as POST /v1/translate does, with beam ${BEAM}`, async () => {
      const { page, serverUrl, requested } = web;
      await openPage(page, serverUrl);
      await loadModelInPage(page, model);
      assert.ok(
        requested.some((u) => u.endsWith(`/v1/models/${model}/files/subword.model`)),
        'the page fetched the subword model',
      );

      const rows = await translateInPage(page, SENTENCES, BEAM, false);
      for (const [i, row] of rows.entries()) {
        const expected = await serverTranslation(serverUrl, model, SENTENCES[i]!, BEAM);
        assert.equal(row.browser, expected, `'${SENTENCES[i]}': in the browser vs POST /v1/translate`);
        assert.ok(!expected.includes('<unk>') && !expected.includes('\u2581'), expected);
      }
    });
  }
});
