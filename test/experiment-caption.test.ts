/**
 * `frost experiment caption-heads` on the toy caption set: show-tell with the learned and the
 * fixed-uniform output layer, one epoch each, exported, the test images captioned and scored; then a
 * rerun that must train and decode nothing and write the same table. Then the grid as a fresh clone sees
 * it (a run folder gone, its row in the committed results.json): reused, not trained, and `--report-only`
 * reports what has finished without training the rest. The experiment runs in this process as the CLI
 * registers it (helpers/frost-in-process.ts); its trainers and exports are children, as always.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { CaptionResults, CaptionRow } from '../experiments/caption-results.ts';
import { imageSpec } from '../experiments/caption-heads.ts';
import { captionRowMismatch, readReportedCaptions } from '../experiments/reported-runs.ts';
import type { RunBudget } from '../report/run-status.ts';
import { frostInProcess } from './helpers/frost-in-process.ts';

let out: string;
const argv = (arch = 'show-tell', extra: string[] = []) => [
  'experiment',
  'caption-heads',
  '--data',
  'toy',
  '--arch',
  arch,
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
  ...extra,
];
/** `frost ...args`: what it printed, or an error with its stderr when it fails. */
async function run(args: string[]): Promise<{ stdout: string; stderr: string }> {
  const { code, stdout, stderr } = await frostInProcess(args);
  if (code !== 0) throw new Error(`frost ${args.join(' ')} exited ${code}:\n${stderr}`);
  return { stdout, stderr };
}
const readResults = async (): Promise<CaptionResults> =>
  JSON.parse(await readFile(join(out, 'report', 'results.json'), 'utf8')) as CaptionResults;
const withoutWall = (md: string) => md.replace(/\(\d+\.\d min wall[^)]*\)/, '');

before(async () => {
  out = await mkdtemp(join(tmpdir(), 'frost-caption-grid-'));
});
after(async () => {
  await rm(out, { recursive: true, force: true });
});

describe('frost experiment caption-heads on the toy set', { timeout: 300_000 }, () => {
  let first: CaptionResults;
  let markdown: string;

  test('trains both heads to the epoch cap and writes the Table 1 layout with example captions', async () => {
    const { stdout } = await run(argv());
    assert.equal(stdout.trim(), join(out, 'report', 'results.md'));
    first = await readResults();
    assert.deepEqual(
      first.rows.map((r) => [r.arch, r.head, r.epochs]),
      [
        ['show-tell', 'learned', '1 (reached 1 epochs)'],
        ['show-tell', 'fixed-uniform', '1 (reached 1 epochs)'],
      ],
    );
    // What tells whether a row stands for a run a later grid wants.
    for (const r of first.rows) {
      assert.deepEqual([r.preset, r.seed, r.budget, r.stopKind], ['tiny', 1, { epochs: 1 }, 'epochs']);
      assert.equal(r.lastGain, null, 'one validated epoch: no curve to judge convergence by');
    }
    assert.equal(first.data, 'toy');
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
    // The example images are linked where the data set keeps them, not copied into a folder that gets committed.
    assert.ok(!existsSync(join(out, 'report', 'examples')));
    const links = [...markdown.matchAll(/!\[([^\]]+)\]\(([^)]+)\)/g)];
    assert.deepEqual(
      links.map((l) => l[1]),
      first.examples.map((ex) => ex.file),
    );
    for (const [, , href] of links) assert.ok(existsSync(join(out, 'report', href!)), `${href} is the image's path`);
    // The command finds this grid again: its runs' folder is part of it.
    assert.ok(markdown.includes(`--beam 2 --out ${out}\` (`), 'the command names --out');
    // One epoch settles no score claim; the parameter counts are known whatever the training.
    assert.match(
      markdown,
      /\n- Fixed target vectors lose at most 0\.5 test BLEU-4 against learned ones: not settled .*without a validation curve long enough to judge\./,
    );
    assert.match(
      markdown,
      /\n- Fixed target vectors cut the learnable parameters by at least 19% \(the paper: 19–33%\): (held|did not hold) \(show-tell fixed-uniform \d+\.\d%/,
    );
  });

  test('a rerun reuses the runs and the cached captions and writes the same table', async () => {
    const { stderr } = await run(argv());
    assert.equal((stderr.match(/finished \(reached 1 epochs\), reused/g) ?? []).length, 2);
    assert.doesNotMatch(stderr, /^training /m, 'nothing trains');
    const again = await readResults();
    assert.deepEqual(again.rows, first.rows, 'decode times too: the captions came from the cache');
    assert.equal(withoutWall(await readFile(join(out, 'report', 'results.md'), 'utf8')), withoutWall(markdown));
  });

  // runs/ is not in git: a grid that spans sessions commits its results, and a fresh clone has only those.
  test('on a fresh clone, a run the committed results keep is reused from its row, not trained again', async () => {
    const learned = join(out, 'show-tell-learned');
    await rm(learned, { recursive: true });
    await rm(join(out, 'artifacts', 'show-tell-learned'), { recursive: true, force: true });
    const { stderr } = await run(argv());
    assert.match(
      stderr,
      /show-tell-learned: no run folder; finished in \S+results\.json \(\d+ steps, test BLEU-4 \d+\.\d\), reused/,
    );
    assert.doesNotMatch(stderr, /^training |show-tell-learned: test captions/m);
    assert.ok(!existsSync(learned), 'the reused run is not trained again');
    const again = await readResults();
    assert.deepEqual(again.rows, first.rows);
    assert.deepEqual(again.examples, first.examples, 'the reused row keeps its example captions');
    assert.equal(withoutWall(await readFile(join(out, 'report', 'results.md'), 'utf8')), withoutWall(markdown));
  });

  test('--report-only reports the runs finished so far and trains nothing', async () => {
    const grid = 'show-tell,show-attend-tell';
    const { stderr } = await run(argv(grid, ['--report-only']));
    assert.doesNotMatch(stderr, /^training /m, 'nothing trains');
    assert.ok(!existsSync(join(out, 'show-attend-tell-learned')), 'a run not started stays so');
    const partial = await readResults();
    assert.deepEqual(partial.rows, first.rows);
    assert.deepEqual(partial.examples, first.examples);
    assert.match(await readFile(join(out, 'report', 'results.md'), 'utf8'), /^2 of 4 runs finished so far/m);
    // Nothing finished, nothing kept: refused rather than an empty table over the committed one.
    await assert.rejects(
      run(argv('show-attend-tell', ['--report-only'])),
      /no run of \S+ has finished yet, and \S+results\.json keeps none: nothing to report/,
    );
  });

  test('--jobs queues the runs the grid lacks across architectures, the finished ones reused', async () => {
    const grid = 'show-tell,show-attend-tell';
    const { stderr } = await run(argv(grid, ['--jobs', '1']));
    // One queue, not one group per architecture: both show-attend-tell heads, one at a time.
    assert.match(stderr, /training show-attend-tell-learned, show-attend-tell-fixed-uniform 1 at a time/);
    assert.match(stderr, /FROST_NATIVE_GEMM_THREADS=\d+/);
    assert.match(stderr, /show-tell-fixed-uniform: finished \(reached 1 epochs\), reused/);
    assert.doesNotMatch(stderr, /training [^\n]*show-tell-fixed-uniform/, 'a finished run is not trained again');
    const full = await readResults();
    assert.deepEqual(
      full.rows.map((r) => `${r.arch}-${r.head}`),
      ['show-tell-learned', 'show-tell-fixed-uniform', 'show-attend-tell-learned', 'show-attend-tell-fixed-uniform'],
    );
    assert.deepEqual(full.rows.slice(0, 2), first.rows);
  });

  test("a results row stands for a run only when it is that run, under the grid's budget, finished", async () => {
    const { results } = await readReportedCaptions(join(out, 'report'));
    const row = results!.rows[0]!;
    const trainFlags = ['--image-size', '32', '--min-freq', '1', '--val-sentences', '20'];
    const want = { arch: 'show-tell', head: 'learned', preset: 'tiny', seed: 1, data: 'toy', beam: 2, trainFlags };
    const budget = { epochs: 1 };
    assert.equal(captionRowMismatch(row, results!, want, budget), null);
    assert.match(
      captionRowMismatch(row, results!, { ...want, trainFlags: ['--image-size', '32'] }, budget) ?? '',
      /trainFlags=--image-size 32 --min-freq 1 --val-sentences 20; this grid wants trainFlags=--image-size 32$/,
    );
    const mismatch = (r: CaptionRow, w: typeof want, b: RunBudget) => captionRowMismatch(r, results!, w, b) ?? '';
    assert.match(mismatch(row, { ...want, seed: 2 }, budget), /it has seed=1; this grid wants seed=2$/);
    assert.match(mismatch(row, want, { epochs: 5 }), /epochs=1; this grid wants epochs=5/);
    assert.match(mismatch(row, want, {}), /epochs=1; this grid wants epochs=none/);
    assert.match(mismatch(row, { ...want, beam: 10 }, budget), /beam=2; this grid wants beam=10/);
    assert.match(mismatch({ ...row, stopKind: null }, want, budget), /did not record that it finished/);
    const { preset: _p, seed: _s, budget: _b, stopKind: _k, ...older } = row;
    assert.match(mismatch(older, want, budget), /it has preset=unrecorded, seed=unrecorded, epochs=unrecorded/);
    // A torn results.json would be overwritten and its runs trained again: refused, naming the file.
    const torn = join(out, 'torn');
    await mkdir(torn, { recursive: true });
    await writeFile(join(torn, 'results.json'), '{"machine": "x", "rows": [');
    await assert.rejects(readReportedCaptions(torn), /torn\/results\.json is not JSON .*move it away/);
    await writeFile(join(torn, 'results.json'), '{"rows": 3}');
    await assert.rejects(readReportedCaptions(torn), /torn\/results\.json is not caption-heads results \(/);
  });
});

// The image cache the grid builds must be the one its trainers read, whichever way the flag is spelt.
test("the grid's image size is read from --train-flags as frost train reads it", () => {
  assert.equal(imageSpec(['--val-sentences', '500']).size, imageSpec([]).size);
  assert.equal(imageSpec(['--image-size', '32', '--min-freq', '1']).size, 32);
  assert.equal(imageSpec(['--image-size=48']).size, 48);
  assert.equal(imageSpec(['--image-size', '32', '--image-size=40']).size, 40, 'the last one wins');
  assert.throws(() => imageSpec(['--image-size', 'big']), /--image-size must be a positive integer, got 'big'/);
  assert.throws(() => imageSpec(['--image-size']), /got ''/);
});
