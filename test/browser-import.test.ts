/**
 * Imported models in the page: a tiny Marian model (train/import/marian.ts; its card's `marian` block, the
 * SentencePiece files fetched beside the graphs) and a tiny fairseq `lightconv` checkpoint with dynamic convolutions
 * (train/import/fairseq.ts, frost's dynamicconv; test/helpers/fairseq/tiny_fairseq.py, converted by
 * frost_torch.convert_checkpoint; its card's `fairseq` block: the dictionary's words, `</s>` after the source), each
 * imported and exported. One headless Chromium loads each from `frost serve` through the page's UI and translates 50
 * Multi30k sentences, greedy and beam 4, exactly as frost's Node runtime does, which test/import-marian.test.ts and
 * test/import-fairseq.test.ts check token for token against their PyTorch references.
 *
 * Skipped, with the reason, where Chromium or Multi30k is missing.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { importFairseq } from '../train/import/fairseq.ts';
import { importMarian } from '../train/import/marian.ts';
import { browserSkipReason, loadModelInPage, openPage, servedPageFixture, translateInPage } from './helpers/browser.ts';
import { multi30kDirOrNull } from './helpers/data-dir.ts';
import { frostInProcess } from './helpers/frost-in-process.ts';
import { findTorchPython } from './helpers/torch-python.ts';

const MARIAN = 'opus-mt-tiny';
const FAIRSEQ = 'fairseq-dynamicconv-tiny';
const SENTENCES = 50;
const HELPERS = join(import.meta.dirname, 'helpers');
const data = multi30kDirOrNull();
const skip = browserSkipReason() || (data === null ? 'no Multi30k (FROST_DATA)' : false);

function python(args: string[]): void {
  const r = spawnSync(findTorchPython(), args, {
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: join(import.meta.dirname, '..', 'python'), PYTHONDONTWRITEBYTECODE: '1' },
  });
  assert.equal(r.status, 0, r.stderr);
}

/** The tiny models' large random weights: see test/import-marian.test.ts. */
async function exportRun(run: string, out: string): Promise<void> {
  const r = await frostInProcess(['export', run, '--out', out, '--quiet', '--parity-tolerance', '1e-3']);
  assert.equal(r.code, 0, r.stderr);
}

describe('imported models in Chromium', { skip, timeout: 300_000 }, () => {
  let models: string;
  const web = servedPageFixture('frost-web-import-', async (root) => {
    models = join(root, 'models');
    const corpus = { dir: data!, kind: 'multi30k' as const };

    const hf = join(root, 'hf');
    python([join(HELPERS, 'marian', 'tiny_marian.py'), hf, data!, '--seed', '3']);
    await importMarian({ from: hf, out: join(root, 'marian-run'), data: corpus });
    await exportRun(join(root, 'marian-run'), join(models, MARIAN));

    const trained = join(root, 'fairseq');
    python([join(HELPERS, 'fairseq', 'tiny_fairseq.py'), trained, data!, '--kind', 'dynamicconv', '--eos-boost', '6']);
    const converted = join(root, 'converted');
    python(['-m', 'frost_torch.convert_checkpoint', join(trained, 'checkpoint_best.pt'), converted]);
    for (const lang of ['de', 'en']) cpSync(join(trained, `dict.${lang}.txt`), join(converted, `dict.${lang}.txt`));
    await importFairseq({ from: converted, out: join(root, 'fairseq-run'), data: corpus });
    await exportRun(join(root, 'fairseq-run'), join(models, FAIRSEQ));
  });

  const sentences = () =>
    gunzipSync(readFileSync(join(data!, 'test_2016_flickr.de.gz')))
      .toString('utf8')
      .split('\n')
      .slice(0, SENTENCES);

  for (const [label, model, varied] of [
    ['Marian', MARIAN, false],
    ['fairseq dynamicconv', FAIRSEQ, true],
  ] as const)
    test(`${label}: the page translates 50 sentences, greedy and beam 4, as frost does in Node`, async () => {
      const input = sentences();
      await openPage(web.page, web.serverUrl);
      await loadModelInPage(web.page, model);
      // Both read German: the page offers a German sentence, not its English default.
      assert.equal(await web.page.inputValue('#source'), 'Ein Mann läuft.');
      const runtime = await loadModelDir(join(models, model), { intraOpNumThreads: 1 });
      try {
        for (const beam of [1, 4]) {
          const rows = await translateInPage(web.page, input, beam, false);
          const node = await runtime.translate(input, { beam });
          if (varied) assert.ok(new Set(node.map((t) => t.text)).size > 10, 'the outputs differ between sentences');
          rows.forEach(({ browser }, i) => assert.equal(browser, node[i]!.text, `beam ${beam}, '${input[i]}'`));
        }
      } finally {
        await runtime.release();
      }
    });
});
