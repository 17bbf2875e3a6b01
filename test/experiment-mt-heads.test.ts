/**
 * `frost experiment mt-heads` end to end on the toy corpus: two heads trained side by side for a
 * few seconds, exported, scored, reported; the report rendered in Chromium (served by `frost
 * serve`'s /reports/ mount) and every chart and table checked against report.json; then a rerun
 * that must reuse everything, and a larger budget that must resume a run.
 *
 * The experiment itself is a cached fixture (mt-heads-experiment.ts): its budget is minutes of
 * training that only change when the code does. The tests that rerun, report on or resume its runs
 * work in a copy of it.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { trainGrid } from '../experiments/grid.ts';
import { ensureExport } from '../report/find-export.ts';
import { readMetrics, runStatus } from '../report/run-status.ts';
import { type Report, reportSchema } from '../report/schema.ts';
import { createApp } from '../serve/app.ts';
import { ModelRegistry } from '../serve/model-registry.ts';
import { browserSkipReason, launchBrowser, type TestBrowser } from './helpers/browser.ts';
import { copyFixture } from './helpers/cached-fixture.ts';
import { frostInProcess } from './helpers/frost-in-process.ts';
import { cachedMtHeadsExperiment } from './helpers/mt-heads-experiment.ts';
import { assertShows, valueAt } from './helpers/report-check.ts';

const HEADS = ['learned', 'fixed-l2'];
const BUDGET = 0.2;

/** The experiment's --out (shared, read-only). */
let out: string;
let report: Report;
let stdout: string;
let tmp: string;
/** A copy of `out` for the tests that write into it. */
let work: string;

before(async () => {
  ({ out, stdout } = await cachedMtHeadsExperiment({ heads: HEADS, budgetMinutes: BUDGET, preset: 'tiny' }));
  report = reportSchema.parse(JSON.parse(await readFile(join(out, 'report', 'report.json'), 'utf8')));
  tmp = await mkdtemp(join(tmpdir(), 'frost-experiment-'));
  work = await copyFixture(out, join(tmp, 'out'));
});

after(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

/** Where a reported run and its export are in the copy. */
const inWork = (r: { id: string }) => ({ runDir: join(work, r.id), modelDir: join(work, 'artifacts', r.id) });

describe('frost experiment mt-heads on the toy corpus', () => {
  test('trains the grid in <out>/<src>-<tgt>-<head>/, exports to <out>/artifacts/, reports in <out>/report/', () => {
    assert.equal(stdout.trim(), join(out, 'report', 'report.html'));
    assert.deepEqual(
      report.runs.map((r) => r.id),
      ['src-tgt-learned', 'src-tgt-fixed-l2'],
    );
    for (const r of report.runs) {
      assert.equal(r.runDir, join(out, r.id));
      assert.equal(r.modelDir, join(out, 'artifacts', r.id));
      assert.ok(existsSync(join(r.modelDir, 'model-card.json')));
      assert.ok(r.training.minutes >= BUDGET, `${r.id} trained ${r.training.minutes} min`);
      assert.equal(r.test.sentences, 100);
      assert.ok(r.test.words > 0 && r.test.vocabUsage > 0);
      // fp16 and int8 files are smaller than fp32 ones
      assert.ok(r.onnx.int8.bytes < r.onnx.fp16.bytes && r.onnx.fp16.bytes < r.onnx.fp32.bytes);
    }
    const [learned, fixed] = report.runs as [Report['runs'][0], Report['runs'][0]];
    // fixed-l2 saves exactly the learned head's W and b (toy vocabulary |V|, tiny preset d = 96)
    const saved = learned.params.learnable - fixed.params.learnable;
    assert.equal(saved, learned.params.components.headLearnable);
    assert.equal(fixed.params.generated, fixed.params.frozen);
    assert.equal(fixed.params.components.headGenerated, fixed.params.frozen);
    assert.equal(fixed.learnableDecrease, saved / learned.params.learnable);
    assert.equal(learned.matrix?.kind, 'learned');
    assert.equal(fixed.matrix?.kind, 'frozen');
    assert.equal(fixed.matrix?.spearman, null, 'fixed-l2 rows all have norm 1');
    assert.equal(typeof learned.matrix?.spearman, 'number');
  });

  test(
    'the report renders in Chromium from /reports/ with charts and tables equal to report.json',
    { skip: browserSkipReason() },
    async () => {
      const app = createApp({ registry: new ModelRegistry([]), reportsDir: out });
      const server: Server = createServer(app);
      await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      let browser: TestBrowser | undefined;
      try {
        const missing = await fetch(`${base}/reports/nope/report.html`);
        assert.equal(missing.status, 404);
        browser = await launchBrowser();
        const page = await browser.context.newPage();
        const response = await page.goto(`${base}/reports/report/`);
        assert.equal(response?.status(), 200);

        const series = (chart: string) =>
          page.$$eval(`svg[data-chart="${chart}"] g.series`, (gs) => gs.map((g) => g.getAttribute('data-series')));
        assert.deepEqual(await series('size'), [
          'embeddings',
          'encoder',
          'decoder',
          'output layer, learned',
          'output layer, frozen (stored)',
          'output layer, generated (not stored)',
        ]);
        assert.deepEqual(await series('bleu-size'), HEADS);
        assert.deepEqual(await series('latency-size'), ['batch 1', 'batch 64']);
        assert.deepEqual(
          await series('learning-curves'),
          report.runs.map((r) => r.id),
        );
        for (const r of report.runs) {
          const points = await page.$$eval(`svg[data-chart="norm-frequency-${r.id}"] circle.point`, (cs) =>
            cs.map((c) => [Number(c.getAttribute('data-x')), Number(c.getAttribute('data-y'))]),
          );
          assert.deepEqual(
            points,
            r.matrix!.points.map((p) => [p.freq, p.norm]),
            `norm-frequency scatter of ${r.id}`,
          );
        }

        // Every bar and point tied to report.json shows its value.
        const bars = await page.$$eval('svg[data-chart="size"] rect.bar', (rs) =>
          rs.map((r) => [r.getAttribute('data-path')!, Number(r.getAttribute('data-value'))] as const),
        );
        assert.equal(bars.length, 6 * report.runs.length);
        for (const [path, v] of bars) assert.equal(v, valueAt(report, path), path);
        const points = await page.$$eval('circle.point[data-y-path]', (cs) =>
          cs.map((c) => ({
            x: Number(c.getAttribute('data-x')),
            y: Number(c.getAttribute('data-y')),
            xPath: c.getAttribute('data-x-path')!,
            xScale: Number(c.getAttribute('data-x-scale')),
            yPath: c.getAttribute('data-y-path')!,
          })),
        );
        const epochs = report.runs.reduce((n, r) => n + r.training.valBleuCurve!.length, 0);
        assert.ok(epochs >= report.runs.length, 'every run validated at least once');
        assert.equal(
          points.length,
          report.runs.length * 3 + epochs,
          'one BLEU and two latency points per run, and one learning-curve point per validated epoch',
        );
        for (const p of points) {
          assert.equal(p.y, valueAt(report, p.yPath), p.yPath);
          assert.ok(Math.abs(p.x - (valueAt(report, p.xPath) as number) * p.xScale) < 1e-9, p.xPath);
        }

        const tables = await page.$$eval('table[data-table]', (ts) => ts.map((t) => t.getAttribute('data-table')));
        assert.deepEqual(tables, [
          'paper-table2',
          'bleu',
          'chrf',
          'claim',
          'params',
          'files',
          'latency',
          'vocabulary',
          'paper-figure2',
          'matrix',
          'pairs-tgt',
          'training',
        ]);
        const cells = await page.$$eval('td[data-path]', (tds) =>
          tds.map((td) => [td.getAttribute('data-path')!, td.textContent ?? ''] as const),
        );
        assert.ok(cells.length >= 50, `only ${cells.length} table cells are tied to report.json`);
        for (const [path, text] of cells) assertShows(report, path, text);
        // Table 2: one row per head, each showing its own run's BLEU.
        const bleuRows = await page.$$eval('table[data-table="bleu"] tbody tr', (trs) =>
          trs.map((tr) => Array.from(tr.querySelectorAll('td'), (c) => c.getAttribute('data-path') ?? c.textContent)),
        );
        assert.deepEqual(bleuRows, [
          ['learned', 'runs.0.test.bleu'],
          ['fixed-l2', 'runs.1.test.bleu'],
        ]);
      } finally {
        await browser?.close();
        await new Promise((done) => server.close(done));
      }
    },
  );

  test('a rerun reuses the finished runs and their exports', async () => {
    const runs = report.runs.map(inWork);
    const before = await Promise.all(runs.map((r) => readFile(join(r.runDir, 'metrics.jsonl'), 'utf8')));
    const lines: string[] = [];
    await trainGrid({
      out: work,
      dataDir: join(work, 'data', 'toy'),
      arch: 'rnn-attn',
      preset: 'tiny',
      seed: 1,
      budgetMinutes: BUDGET,
      pairs: [{ src: 'src', tgt: 'tgt' }],
      heads: HEADS,
      log: (l) => lines.push(l),
    });
    assert.deepEqual(
      lines.map((l) => l.endsWith('reused')),
      [true, true],
    );
    assert.deepEqual(await Promise.all(runs.map((r) => readFile(join(r.runDir, 'metrics.jsonl'), 'utf8'))), before);
    for (const [i, r] of runs.entries()) {
      const exp = await ensureExport(r.runDir, { preferred: r.modelDir });
      assert.equal(exp.exported, false);
      assert.equal(exp.checkpoint.sha256, report.runs[i]!.checkpoint.sha256);
    }
  });

  test('`frost report` on the same runs reuses their exports and cached measurements', async () => {
    const again = join(work, 'again');
    const runDirs = report.runs.map((r) => inWork(r).runDir);
    const printed = await frostInProcess(['report', ...runDirs, '--out', again, '--quiet']);
    assert.equal(printed.code, 0, printed.stderr);
    assert.equal(printed.stdout.trim(), join(again, 'report.html'));
    const second = reportSchema.parse(JSON.parse(await readFile(join(again, 'report.json'), 'utf8')));
    // Timings are measured once per checkpoint: equal numbers mean nothing was decoded or timed again. Only the
    // grid knows the flags it gave its trainers. The runs reported are the copies.
    const ungridded = report.runs.map(({ training: { trainFlags: _flags, ...training }, ...r }) => ({
      ...r,
      ...inWork(r),
      training,
    }));
    assert.deepEqual(second.runs, ungridded);
    assert.equal(second.title, 'again');
  });

  test('a larger budget resumes the run where it stopped', async () => {
    const runDir = inWork(report.runs[0]!).runDir;
    const steps = report.runs[0]!.training.steps;
    const lines = (await readMetrics(runDir)).length;
    await trainGrid({
      out: work,
      dataDir: join(work, 'data', 'toy'),
      arch: 'rnn-attn',
      preset: 'tiny',
      seed: 1,
      budgetMinutes: BUDGET + 0.1,
      pairs: [{ src: 'src', tgt: 'tgt' }],
      heads: ['learned'],
      log: () => {},
    });
    const status = await runStatus(runDir, BUDGET + 0.1);
    assert.equal(status.kind, 'finished');
    const metrics = await readMetrics(runDir);
    assert.ok(metrics.length > lines);
    assert.ok(metrics[metrics.length - 1]!.step > steps, 'training continued from the checkpoint');
  });
});
