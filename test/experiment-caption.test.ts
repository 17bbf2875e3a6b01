/**
 * `frost experiment caption-heads` on the toy caption set: show-tell with the learned and the
 * fixed-uniform output layer, one epoch each, exported, the test images captioned and scored; then a
 * rerun that must train and decode nothing and write the same table.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import type { CaptionRow } from '../report/caption-results.ts';

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, '..');

let out: string;
const argv = () => [
  join(ROOT, 'bin', 'frost.js'),
  'experiment',
  'caption-heads',
  '--data',
  'toy',
  '--arch',
  'show-tell',
  '--max-epochs',
  '1',
  '--preset',
  'tiny',
  '--beam',
  '2',
  '--train-flags',
  '--image-size 32 --min-freq 1 --val-sentences 20',
  '--out',
  out,
];

before(async () => {
  out = await mkdtemp(join(tmpdir(), 'frost-caption-grid-'));
});
after(async () => {
  await rm(out, { recursive: true, force: true });
});

describe('frost experiment caption-heads on the toy set', { timeout: 300_000 }, () => {
  let first: { rows: CaptionRow[]; examples: { captions: Record<string, string> }[] };
  let markdown: string;

  test('trains both heads to the epoch cap and writes the Table 1 layout with example captions', async () => {
    const { stdout } = await run(process.execPath, argv(), { cwd: ROOT, timeout: 240_000 });
    assert.equal(stdout.trim(), join(out, 'report', 'results.md'));
    first = JSON.parse(await readFile(join(out, 'report', 'results.json'), 'utf8')) as typeof first;
    assert.deepEqual(
      first.rows.map((r) => [r.arch, r.head, r.epochs]),
      [
        ['show-tell', 'learned', '1 (reached 1 epochs)'],
        ['show-tell', 'fixed-uniform', '1 (reached 1 epochs)'],
      ],
    );
    const [learned, fixed] = first.rows as [CaptionRow, CaptionRow];
    assert.ok(fixed.learnable < learned.learnable, 'the fixed head has no learnable output matrix');
    assert.ok(fixed.frozen > 0 && learned.frozen === 0);
    for (const r of first.rows) {
      assert.ok(r.scores.vocab.distinctWords >= 1);
      // every example caption is the model's own, and none contains <unk>
      for (const ex of first.examples) assert.doesNotMatch(ex.captions[`${r.arch}-${r.head}`]!, /<unk>/);
    }
    markdown = await readFile(join(out, 'report', 'results.md'), 'utf8');
    assert.match(markdown, /\| Show and Tell \| `fixed-uniform` \| [\d,]+ \(-\d+\.\d%\) \|/);
    assert.match(markdown, /training at most 1 epochs per model, beam 2/);
  });

  test('a rerun reuses the runs and the cached captions and writes the same table', async () => {
    const { stderr } = await run(process.execPath, argv(), { cwd: ROOT, timeout: 120_000 });
    assert.equal((stderr.match(/finished \(reached 1 epochs\), reused/g) ?? []).length, 2);
    assert.doesNotMatch(stderr, /side by side/);
    const again = JSON.parse(await readFile(join(out, 'report', 'results.json'), 'utf8')) as typeof first;
    assert.deepEqual(again.rows, first.rows, 'decode times too: the captions came from the cache');
    const withoutWall = (md: string) => md.replace(/\(\d+\.\d min wall[^)]*\)/, '');
    assert.equal(withoutWall(await readFile(join(out, 'report', 'results.md'), 'utf8')), withoutWall(markdown));
  });
});
