/**
 * An imported Marian model (train/import/marian.ts) in the page: headless Chromium loads it from `frost serve`
 * through the page's UI (its card's `marian` block, the SentencePiece files fetched beside the graphs) and
 * translates 50 Multi30k sentences, greedy and beam 4, exactly as frost's Node runtime does, which
 * test/import-marian.test.ts checks token for token against the PyTorch reference.
 *
 * Skipped, with the reason, where Chromium or Multi30k is missing.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { importMarian } from '../train/import/marian.ts';
import { browserSkipReason, loadModelInPage, openPage, servedPageFixture, translateInPage } from './helpers/browser.ts';
import { multi30kDirOrNull } from './helpers/data-dir.ts';
import { frostInProcess } from './helpers/frost-in-process.ts';
import { findTorchPython } from './helpers/torch-python.ts';

const MODEL = 'opus-mt-tiny';
const SENTENCES = 50;
const data = multi30kDirOrNull();
const skip = browserSkipReason() || (data === null ? 'no Multi30k (FROST_DATA)' : false);

describe('an imported Marian model in Chromium', { skip, timeout: 300_000 }, () => {
  let modelDir: string;
  const web = servedPageFixture('frost-web-marian-', async (root) => {
    const hf = join(root, 'hf');
    const built = spawnSync(
      findTorchPython(),
      [join(import.meta.dirname, 'helpers', 'marian', 'tiny_marian.py'), hf, data!, '--seed', '3'],
      { encoding: 'utf8' },
    );
    assert.equal(built.status, 0, built.stderr);
    const run = join(root, 'run');
    await importMarian({ from: hf, out: run, data: { dir: data!, kind: 'multi30k' } });
    modelDir = join(root, 'models', MODEL);
    // The tiny model's large random weights: see test/import-marian.test.ts.
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
        rows.forEach(({ browser }, i) => assert.equal(browser, node[i]!.text, `beam ${beam}, '${sentences[i]}'`));
      }
    } finally {
      await runtime.release();
    }
  });
});
