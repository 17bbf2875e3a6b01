/**
 * An imported fairseq model (train/import/fairseq.ts) in the page: a tiny fairseq `lightconv` checkpoint with dynamic
 * convolutions (frost's dynamicconv; test/helpers/fairseq/tiny_fairseq.py, converted by frost_torch.convert_checkpoint)
 * is imported and exported, and headless Chromium loads it from `frost serve` through the page's UI (its card's
 * `fairseq` tokenizer block: fairseq's dictionary words, `</s>` after the source) and translates 50 Multi30k
 * sentences, greedy and beam 4, exactly as frost's Node runtime does, which test/import-fairseq.test.ts checks token
 * for token against the PyTorch reference.
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
import { browserSkipReason, loadModelInPage, openPage, servedPageFixture, translateInPage } from './helpers/browser.ts';
import { multi30kDirOrNull } from './helpers/data-dir.ts';
import { frostInProcess } from './helpers/frost-in-process.ts';
import { findTorchPython } from './helpers/torch-python.ts';

const MODEL = 'fairseq-dynamicconv-tiny';
const SENTENCES = 50;
const HELPERS = join(import.meta.dirname, 'helpers', 'fairseq');
const data = multi30kDirOrNull();
const skip = browserSkipReason() || (data === null ? 'no Multi30k (FROST_DATA)' : false);

function python(args: string[]): void {
  const r = spawnSync(findTorchPython(), args, {
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: join(import.meta.dirname, '..', 'python'), PYTHONDONTWRITEBYTECODE: '1' },
  });
  assert.equal(r.status, 0, r.stderr);
}

describe('an imported fairseq dynamicconv model in Chromium', { skip, timeout: 300_000 }, () => {
  let modelDir: string;
  const web = servedPageFixture('frost-web-fairseq-', async (root) => {
    const trained = join(root, 'fairseq');
    python([join(HELPERS, 'tiny_fairseq.py'), trained, data!, '--kind', 'dynamicconv', '--eos-boost', '6']);
    const converted = join(root, 'converted');
    python(['-m', 'frost_torch.convert_checkpoint', join(trained, 'checkpoint_best.pt'), converted]);
    for (const lang of ['de', 'en']) cpSync(join(trained, `dict.${lang}.txt`), join(converted, `dict.${lang}.txt`));
    const run = join(root, 'run');
    await importFairseq({ from: converted, out: run, data: { dir: data!, kind: 'multi30k' } });
    modelDir = join(root, 'models', MODEL);
    // The tiny model's large random weights: see test/import-fairseq.test.ts.
    const r = await frostInProcess(['export', run, '--out', modelDir, '--quiet', '--parity-tolerance', '1e-3']);
    assert.equal(r.code, 0, r.stderr);
  });

  test('the page translates 50 sentences, greedy and beam 4, as frost does in Node', async () => {
    const sentences = gunzipSync(readFileSync(join(data!, 'test_2016_flickr.de.gz')))
      .toString('utf8')
      .split('\n')
      .slice(0, SENTENCES);
    await openPage(web.page, web.serverUrl);
    await loadModelInPage(web.page, MODEL);
    const runtime = await loadModelDir(modelDir, { intraOpNumThreads: 1 });
    try {
      for (const beam of [1, 4]) {
        const rows = await translateInPage(web.page, sentences, beam, false);
        const node = await runtime.translate(sentences, { beam });
        assert.ok(new Set(node.map((t) => t.text)).size > 10, 'the outputs differ between sentences');
        rows.forEach(({ browser }, i) => assert.equal(browser, node[i]!.text, `beam ${beam}, '${sentences[i]}'`));
      }
    } finally {
      await runtime.release();
    }
  });
});
