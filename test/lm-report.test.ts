/**
 * `frost report` on language-model runs: one row per head with `frost eval`'s perplexities (equal
 * numbers), the frequency bins and DRILL's claim, in report.json, report.md and report.html; a
 * current eval.json is reused and a stale one recomputed; mixed lists are refused. The commands run
 * in this process (helpers/frost-in-process.ts), on copies of cached runs (they write eval.json).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { refuseMixedRuns } from '../report/choose-report.ts';
import { collectLmReport } from '../report/collect-lm.ts';
import type { LmReport } from '../report/lm-schema.ts';
import { taskReport } from '../report/tasks/index.ts';
import { initBackend } from '../train/backend/select.ts';
import { LM_EVAL_FILE, type LmEvaluation } from '../train/lm/lm-eval-run.ts';
import { copyFixture } from './helpers/cached-fixture.ts';
import { frostInProcess as frost } from './helpers/frost-in-process.ts';
import { cachedLmRun, SMALL_LM } from './helpers/lm-fixtures.ts';
import { toyRunConfig } from './helpers/toy-run.ts';

let dir: string;
const runs = { learned: '', drill: '' };

before(async () => {
  await initBackend({ quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-lm-report-'));
  const learned = await cachedLmRun(SMALL_LM);
  const drill = await cachedLmRun({
    ...SMALL_LM,
    config: { epochs: 1, head: { name: 'drill', options: { layers: 1 } } },
  });
  // Reports and evaluations write eval.json into the runs; the folder names are the reports' run ids.
  runs.learned = await copyFixture(learned.runDir, join(dir, 'lm-learned'));
  runs.drill = await copyFixture(drill.runDir, join(dir, 'lm-drill'));
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('frost report on two lm runs: one row per head with frost eval’s perplexities, in json, md and html', async () => {
  const out = join(dir, 'report');
  const reported = await frost(['report', runs.learned, runs.drill, '--out', out, '--quiet']);
  assert.equal(reported.code, 0, reported.stderr);
  assert.equal(reported.stdout.trim(), join(out, 'report.html'));
  const report = JSON.parse(await readFile(join(out, 'report.json'), 'utf8')) as LmReport;
  assert.equal(report.format, 'frost-lm-report');
  assert.deepEqual(
    report.runs.map((r) => [r.id, r.head, r.baseline]),
    [
      ['lm-learned', 'learned', 'lm-learned'],
      ['lm-drill', 'drill', 'lm-learned'],
    ],
  );

  // frost eval, run afterwards, recomputes from the checkpoints: the same numbers, bin by bin.
  const evaluated = await frost(['eval', runs.learned, runs.drill, '--json']);
  assert.equal(evaluated.code, 0, evaluated.stderr);
  const evals = JSON.parse(evaluated.stdout) as LmEvaluation[];
  report.runs.forEach((r, i) => {
    const e = evals[i];
    assert.equal(r.valid.perplexity, e.valid.perplexity);
    assert.equal(r.test.perplexity, e.test.perplexity);
    assert.equal(r.test.bins.length, 5);
    assert.deepEqual(
      r.test.bins.map((b) => [b.bin, b.types, b.tokens, b.perplexity]),
      e.test.bins.map((b) => [b.bin, b.types, b.tokens, b.perplexity]),
    );
    assert.equal(r.params.learnable, e.params?.learnable);
    assert.ok(r.training.epochs === 1 && r.training.steps > 0);
  });
  const [learned, drill] = report.runs;
  assert.ok(drill.params.learnable > learned.params.learnable, 'drill adds residual layers to the learned matrix');
  assert.equal(drill.learnableDecrease, (learned.params.learnable - drill.params.learnable) / learned.params.learnable);
  const rareChange =
    (drill.test.bins[4].perplexity! - learned.test.bins[4].perplexity!) / learned.test.bins[4].perplexity!;
  assert.equal(drill.vsBaseline?.bins[4], rareChange);

  const md = await readFile(join(out, 'report.md'), 'utf8');
  const row = (r: LmReport['runs'][number]) => `| ${r.id} | ${r.head} | ${r.params.learnable.toLocaleString('en')} | `;
  for (const r of report.runs) {
    const line = md.split('\n').find((l) => l.startsWith(row(r)));
    assert.ok(line, `report.md has ${r.id}'s row`);
    const cells = line.split('|').map((c) => c.trim());
    assert.deepEqual(
      cells.slice(5, 12),
      [r.valid.perplexity, r.test.perplexity, ...r.test.bins.map((b) => b.perplexity)].map((v) => v!.toFixed(2)),
    );
  }
  assert.match(md, /### DRILL's rare-word claim on this machine/);
  assert.match(
    md,
    new RegExp(
      `\\| lm-drill \\| lm-learned \\| .* \\| \\${rareChange >= 0 ? '+' : '-'}${Math.abs(rareChange * 100).toFixed(1)}% \\| ${rareChange < 0 ? 'yes' : 'no'} \\|`,
    ),
  );

  const html = await readFile(join(out, 'report.html'), 'utf8');
  const cell = (path: string) =>
    new RegExp(`<td class="num" data-path="${path.replace(/\./g, '\\.')}">([^<]*)</td>`).exec(html)?.[1];
  report.runs.forEach((r, i) => {
    assert.equal(cell(`runs.${i}.test.perplexity`), r.test.perplexity!.toFixed(2));
    r.test.bins.forEach((b, k) => assert.equal(cell(`runs.${i}.test.bins.${k}.perplexity`), b.perplexity!.toFixed(2)));
  });
  assert.match(html, /data-table="lm-claim"/);
  // Every numeric cell names a number of report.json (a wrong path would resolve to undefined).
  const paths = [...html.matchAll(/data-path="([^"]+)"/g)].map((m) => m[1]);
  assert.ok(paths.length > 30);
  for (const p of paths) {
    const v = p.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | null)?.[k], report);
    assert.ok(typeof v === 'number' || v === null, `${p} names a number of report.json (got ${String(v)})`);
  }
});

test('a current eval.json is reused; one for another checkpoint is recomputed', async () => {
  const path = join(runs.learned, LM_EVAL_FILE);
  const saved = JSON.parse(await readFile(path, 'utf8')) as LmEvaluation;
  const real = saved.test.perplexity;
  // A marker value in a current eval.json shows the report read the file instead of evaluating.
  await writeFile(path, JSON.stringify({ ...saved, test: { ...saved.test, perplexity: 123.5 } }));
  const reused = await collectLmReport([runs.learned], { title: 't' });
  assert.equal(reused.runs[0].test.perplexity, 123.5);
  await writeFile(
    path,
    JSON.stringify({
      ...saved,
      checkpoint: { ...saved.checkpoint, sha256: '0'.repeat(64) },
      test: { ...saved.test, perplexity: 123.5 },
    }),
  );
  const recomputed = await collectLmReport([runs.learned], { title: 't' });
  assert.equal(recomputed.runs[0].test.perplexity, real);
  assert.equal((JSON.parse(await readFile(path, 'utf8')) as LmEvaluation).test.perplexity, real, 'eval.json rewritten');
  // An eval.json from before it kept the checkpoint's hash and the parameters is recomputed too.
  const old: Partial<LmEvaluation> = { ...saved };
  delete old.params;
  await writeFile(
    path,
    JSON.stringify({
      ...old,
      checkpoint: { which: 'best', dir: saved.checkpoint.dir },
      test: { ...saved.test, perplexity: 123.5 },
    }),
  );
  assert.equal((await collectLmReport([runs.learned], { title: 't' })).runs[0].test.perplexity, real);
});

test('frost report refuses lm runs mixed with translation runs, in one line naming both, writing nothing', async () => {
  // A translation run's folder as frost report first reads it: its config.json (the task decides).
  const mt = join(dir, 'de-en-learned');
  await mkdir(mt, { recursive: true });
  await writeFile(join(mt, 'config.json'), JSON.stringify(toyRunConfig(join(dir, 'toy'), 'learned')));
  const out = join(dir, 'mixed');
  const mixed = await frost(['report', runs.drill, mt, '--out', out, '--quiet']);
  assert.notEqual(mixed.code, 0);
  assert.match(
    mixed.stderr,
    new RegExp(`cannot report language-model runs \\(${runs.drill}\\) together with other runs \\(${mt}\\)`),
  );
  assert.equal(existsSync(out), false);
  const [translation, lm] = [taskReport('translation'), taskReport('lm')];
  assert.throws(
    () => refuseMixedRuns(['a', 'b'], [translation, lm]),
    /language-model runs \(b\) together with other runs \(a\)/,
  );
  refuseMixedRuns(['a', 'b'], [lm, lm]);
  refuseMixedRuns(['a', 'b'], [translation, translation]);
});
