/**
 * The paper's layouts in a report: Table 2 with the paper's numbers beside frost's (attention GRU),
 * seed 003's Table 3 (Transformer), Figure 2 at convergence, and the verdicts generated from the data.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { compareWithBaselines } from '../report/collect.ts';
import type { CollectedRun } from '../report/collect-run.ts';
import { reportLayout } from '../report/layout.ts';
import { reportTables } from '../report/tables.ts';
import { reportClaims } from '../experiments/claims/report-claims.ts';
import { figure2Sentence, figure2Table } from '../experiments/paper/figure2.ts';
import { paperBleu, paperTables, PAPER_RESULTS } from '../experiments/paper/index.ts';
import { lastGain } from '../report/convergence.ts';
import { type Report, reportSchema } from '../report/schema.ts';
import { claimVerdicts, verdictSentences } from '../experiments/claims/verdicts.ts';
import { claimTable } from '../experiments/claims/claim.ts';
import { assertShows } from './helpers/report-check.ts';
import { fixtureRun } from './helpers/report-fixture.ts';

type Training = Partial<CollectedRun['training']>;

const converged: Training = { epochs: 31, minutes: 95, budgetMinutes: null, stopKind: 'plateau' };

/** Stopped at a 20-epoch cap with this validation curve (epochs 1..n), its gain computed as collect-run.ts does. */
function capped(bleus: number[]): Training {
  const valBleuCurve = bleus.map((bleu, i) => ({ epoch: i + 1, step: 454 * (i + 1), bleu }));
  return {
    epochs: bleus.length,
    minutes: 70,
    budgetMinutes: null,
    budgetEpochs: 20,
    stopKind: 'epochs',
    stopReason: `reached ${bleus.length} epochs`,
    valBleuCurve,
    lastGain: lastGain(valBleuCurve),
  };
}

/** Flat for its last 8 epochs: its last five gained 0.10 on the best before them. */
const FLAT = [
  11, 18, 23, 25, 26.5, 27.5, 28.2, 28.8, 29.2, 29.6, 29.9, 30, 29.8, 30.1, 29.9, 30, 29.7, 30.2, 30.05, 29.95,
];
/** Still climbing at the cap: its last five gained 1.12. */
const GAINING = [
  10, 15, 19, 21.5, 23, 24.2, 25, 25.7, 26.2, 26.6, 27, 27.3, 27.5, 27.7, 27.88, 28.1, 28.4, 28.6, 28.8, 29,
];

/**
 * learned, tied and fixed-l2 on both directions of Multi30k; `bleu` by run id overrides the scores, `trainingOf`
 * by run id the training record.
 */
function grid(
  opts: {
    arch?: string;
    heads?: string[];
    training?: Training;
    trainingOf?: Record<string, Training>;
    bleu?: Record<string, number>;
  } = {},
) {
  const heads = opts.heads ?? ['learned', 'tied', 'fixed-l2'];
  const runs = (['de-en', 'en-de'] as const).flatMap((pair) =>
    heads.map((head, k) => {
      const id = `${pair}-${head}`;
      const [src, tgt] = pair.split('-') as [string, string];
      return fixtureRun(
        id,
        head,
        [src, tgt],
        {
          learnable: head === 'fixed-l2' ? 7000 : head === 'tied' ? 9000 : 10_000,
          bleu: opts.bleu?.[id] ?? 30 + k * 0.1,
          bytes: 4_000_000,
          spearman: head === 'fixed-l2' ? null : 0.7 + k * 0.05,
        },
        { arch: opts.arch ?? 'rnn-attn', training: opts.trainingOf?.[id] ?? opts.training ?? converged },
      );
    }),
  );
  for (const r of runs) if (r.head === 'tied' && r.matrix) r.matrix.kind = 'learned';
  return reportSchema.parse({
    format: 'frost-report',
    version: 1,
    title: 'grid',
    created: '2026-11-25T00:00:00.000Z',
    machine: { cpu: 'Test CPU', cores: 2, node: 'v22', onnxruntime: '1.30.0' },
    settings: { beam: 5, rareThreshold: 100 },
    runs: compareWithBaselines(runs),
  });
}

const texts = (report: Report, id: string) => {
  const t = paperTables(report).find((x) => x.id === id);
  assert.ok(t, `no table ${id}`);
  return t.rows.map((row) => row.map((c) => c.text));
};

describe("the paper's layouts", () => {
  test("Table 2 (rnn-attn): frost's BLEU beside the paper's, learnable parameters and the reduction per direction", () => {
    const report = grid();
    const tables = paperTables(report);
    assert.deepEqual(
      tables.map((t) => t.id),
      ['paper-table2'],
    );
    assert.equal(PAPER_RESULTS.table2.bleu['de-en']!.learned, 33.02);
    assert.deepEqual(texts(report, 'paper-table2'), [
      ['learned', 'learned', '30.00', '33.02', '10,000', 'baseline', '30.00', '31.63', '10,000', 'baseline'],
      ['tied', 'tied', '30.10', '33.08', '9,000', '10.0%', '30.10', '31.49', '9,000', '10.0%'],
      ['fixed-l2', 'fixed', '30.20', '33.17', '7,000', '30.0%', '30.20', '32.12', '7,000', '30.0%'],
    ]);
    // frost's cells name the report.json value they show
    for (const row of tables[0]!.rows) for (const c of row) if (c.path) assertShows(report, c.path, c.text);
    assert.equal(
      paperBleu({ src: 'de', tgt: 'en', head: 'hadamard' }),
      33.17,
      'every frozen head stands beside "fixed"',
    );
    assert.equal(paperBleu({ src: 'de', tgt: 'en', head: 'drill' }), null);
    assert.equal(paperBleu({ src: 'fr', tgt: 'en', head: 'learned' }), null);
  });

  test("seed 003's Table 3 for a Transformer grid: one row per sharing method, BLEU per direction", () => {
    const heads = ['learned', 'tied', 'shared-l2', 'shared-sqnorm', 'fixed-l2'];
    const report = grid({ arch: 'transformer', heads });
    assert.deepEqual(
      paperTables(report).map((t) => t.id),
      ['paper-table3-transformer'],
    );
    const rows = texts(report, 'paper-table3-transformer');
    assert.deepEqual(
      rows.map((r) => r[0]),
      heads,
    );
    // no cased BLEU in this fixture: a dash; lower-cased BLEU and learnable parameters per direction
    assert.deepEqual(rows[2], ['shared-l2', '–', '30.20', '10,000', '–', '30.20', '10,000']);
  });
});

describe('Figure 2 and the verdicts', () => {
  test("Figure 2: learned heads' ρ beside the paper's and the short run's; the turn-around said from the data", () => {
    const report = grid();
    const table = figure2Table(report)!;
    assert.deepEqual(
      table.rows.map((r) => [r[0]!.text, r[3]!.text, r[4]!.text, r[5]!.text]),
      [
        ['de-en-learned', '0.700', '0.84 / 0.93', '-0.812'],
        ['de-en-tied', '0.750', '0.84 / 0.93', '-0.694'],
        ['en-de-learned', '0.700', '0.84 / 0.93', '-0.664'],
        ['en-de-tied', '0.750', '0.84 / 0.93', '-0.655'],
      ],
    );
    const sentence = figure2Sentence(report)!;
    assert.match(sentence, /^After 31 epochs the learned target vectors' norms correlate positively/);
    assert.match(sentence, /turned around \(de-en-learned -0\.81 → 0\.70/);
    for (const r of report.runs) if (r.matrix?.kind === 'learned') r.matrix.spearman = -0.2;
    assert.match(figure2Sentence(report)!, /correlate negatively.*did not turn around/);
    // The short runs themselves (no complete epoch) are not compared with themselves.
    for (const r of report.runs) r.training.epochs = 0;
    assert.doesNotMatch(figure2Sentence(report)!, /turn/);
    assert.equal(figure2Table(report)!.rows[0]![5]!.text, '–');
  });

  test('converged runs within 0.5 BLEU: held; a frozen head 0.6 behind: did not hold; capped runs: not settled', () => {
    const [bleu, params, norms] = claimVerdicts(grid());
    assert.equal(bleu!.verdict, 'held');
    assert.match(
      bleu!.sentence,
      /fixed-l2 de→en \+0\.20, fixed-l2 en→de \+0\.20; no interval: hypotheses not stored; each of these runs stopped by the stopping rule\)\.$/,
    );
    assert.match(norms!.sentence, /; each of these runs stopped by the stopping rule\)\.$/);
    assert.equal(params!.verdict, 'held', '30% is inside 19–33%');
    assert.equal(norms!.verdict, 'held');
    const behind = claimVerdicts(grid({ bleu: { 'en-de-fixed-l2': 29.4 } }))[0]!;
    assert.equal(behind.verdict, 'did not hold');
    assert.match(behind.sentence, /fixed-l2 en→de -0\.60/);
    // A converged frozen head behind by more than the margin refutes the claim while another run still gains.
    const refuted = claimVerdicts(
      grid({
        training: capped(FLAT),
        trainingOf: { 'de-en-fixed-l2': capped(GAINING) },
        bleu: { 'en-de-fixed-l2': 29.4 },
      }),
    )[0]!;
    assert.equal(refuted.verdict, 'did not hold');
    assert.match(
      refuted.sentence,
      /\): fixed-l2 en→de converged more than 0\.5 behind; fixed-l2 de→en gained 1\.12 validation BLEU in its last 5 epochs\.$/,
    );
    // Behind but still gaining: open, not refuted.
    const gainingBehind = grid({ training: capped(FLAT), trainingOf: { 'en-de-fixed-l2': capped(GAINING) } });
    gainingBehind.runs.find((r) => r.id === 'en-de-fixed-l2')!.bleuDelta = -0.6;
    assert.equal(claimVerdicts(gainingBehind)[0]!.verdict, 'not settled');
    // Runs without a validation curve (reports from before curves were kept) read as they always did.
    const cappedRuns = claimVerdicts(grid({ training: { ...converged, stopKind: 'epochs' } }))[0]!;
    assert.equal(cappedRuns.verdict, 'not settled');
    assert.equal(
      cappedRuns.sentence,
      'Fixed target vectors lose at most 0.5 test BLEU against learned ones: not settled (BLEU against learned: fixed-l2 de→en +0.20, fixed-l2 en→de +0.20; no interval: hypotheses not stored): not every run stopped by the stopping rule (4 at the epoch cap).',
    );
    const budgeted = claimVerdicts(grid({ training: { ...converged, stopKind: 'updates' } }))[0]!;
    assert.equal(budgeted.verdict, 'not settled');
    assert.match(budgeted.sentence, /4 at the update budget/);
    // Converged runs all short of a strong correlation refute the claim, weakly positive ones too; runs that
    // disagree leave it open.
    const weak = grid();
    for (const [i, r] of weak.runs.filter((x) => x.matrix?.kind === 'learned').entries())
      r.matrix!.spearman = i * 0.2 - 0.3;
    const weakNorms = claimVerdicts(weak)[2]!;
    assert.equal(weakNorms.verdict, 'did not hold');
    assert.match(
      weakNorms.sentence,
      /\(Spearman ρ learned de→en -0\.30, tied de→en -0\.10, learned en→de 0\.10, tied en→de 0\.30;/,
    );
    weak.runs.find((r) => r.id === 'en-de-tied')!.matrix!.spearman = 0.6;
    const mixed = claimVerdicts(weak)[2]!;
    assert.equal(mixed.verdict, 'not settled');
    assert.match(mixed.sentence, /\): 1 of 4 runs reach 0\.5\.$/);
    const cappedNorms = claimVerdicts(grid({ training: { ...converged, stopKind: 'epochs' } }))[2]!;
    assert.equal(cappedNorms.verdict, 'not settled', 'a strong correlation before convergence settles nothing');
    const setting = verdictSentences(grid()).at(-1)!;
    assert.match(setting, /^Where frost's setting differs: rnn-attn\/small \(10,000 learnable parameters/);
    assert.match(setting, /learned de→en 30\.00 vs 33\.02/);
    // one figure where every run shows the same, a range otherwise
    assert.match(setting, /, trained 31 epochs \(1\.58 h each on 2 cores; 6 by the stopping rule\)/);
    const uneven = grid({ trainingOf: { 'de-en-tied': { ...converged, epochs: 28, minutes: 80 } } });
    assert.match(verdictSentences(uneven).at(-1)!, /, trained 28–31 epochs \(1\.33–1\.58 h each/);
  });

  test('capped runs with flat validation curves settle the claims; a capped run still gaining leaves them open, named', () => {
    const flat = grid({ training: capped(FLAT) });
    assert.ok(flat.runs.every((r) => Math.abs(r.training.lastGain! - 0.1) < 1e-9));
    const [bleu, , norms] = claimVerdicts(flat);
    assert.equal(bleu!.verdict, 'held');
    assert.match(
      bleu!.sentence,
      /\(BLEU against learned: fixed-l2 de→en \+0\.20, fixed-l2 en→de \+0\.20; no interval: hypotheses not stored; each of these runs gained under 0\.5 validation BLEU in its last 5 epochs\)\.$/,
    );
    assert.equal(norms!.verdict, 'held');
    assert.match(norms!.sentence, /each of these runs gained under 0\.5 validation BLEU in its last 5 epochs\)\.$/);
    // A capped grid still short of the claim's margin is settled the other way too.
    assert.equal(
      claimVerdicts(grid({ training: capped(FLAT), bleu: { 'de-en-fixed-l2': 29 } }))[0]!.verdict,
      'did not hold',
    );

    // The learned de→en baseline still climbs 1.12 at the cap: the BLEU claim (it is the baseline) and the norm
    // claim (its vectors are learned) are open; the runs that are flat are not named.
    const open = grid({ training: capped(FLAT), trainingOf: { 'de-en-learned': capped(GAINING) } });
    const [openBleu, openParams, openNorms] = claimVerdicts(open);
    assert.equal(openBleu!.verdict, 'not settled');
    assert.match(openBleu!.sentence, /\): learned de→en gained 1\.12 validation BLEU in its last 5 epochs\.$/);
    assert.equal(openParams!.verdict, 'held', 'parameter counts need no convergence');
    assert.equal(openNorms!.verdict, 'not settled');
    assert.match(openNorms!.sentence, /: learned de→en gained 1\.12 validation BLEU in its last 5 epochs\.$/);
    assert.equal(
      openNorms!.sentence.split('): ').at(-1),
      'learned de→en gained 1.12 validation BLEU in its last 5 epochs.',
      'only the run still gaining is named',
    );

    // Two runs gaining, and a run with too short a curve to judge (5 epochs): all named, the latter by how it stopped.
    const two = grid({
      training: capped(FLAT),
      trainingOf: {
        'de-en-learned': capped(GAINING),
        'en-de-fixed-l2': capped(GAINING.map((b) => b + 0.5)),
        'en-de-learned': capped(FLAT.slice(0, 5)),
      },
    });
    assert.equal(two.runs.find((r) => r.id === 'en-de-learned')!.training.lastGain, null);
    assert.match(
      claimVerdicts(two)[0]!.sentence,
      /: learned de→en gained 1\.12, fixed-l2 en→de gained 1\.12 validation BLEU in their last 5 epochs; not every run stopped by the stopping rule \(4 at the epoch cap\)\.$/,
    );
  });

  test('a grid of plateau-stopped and flat capped runs is settled by both, and says so', () => {
    const mixed = grid({
      training: capped(FLAT),
      trainingOf: { 'de-en-learned': converged, 'en-de-learned': converged },
    });
    const [bleu] = claimVerdicts(mixed);
    assert.equal(bleu!.verdict, 'held');
    assert.match(
      bleu!.sentence,
      /; each of these runs stopped by the stopping rule or gained under 0\.5 validation BLEU in its last 5 epochs\)\.$/,
    );
    // Stopped by the rule, the gain does not matter: the rule is final.
    const ruled = grid({ training: { ...capped(GAINING), stopKind: 'plateau' } });
    assert.equal(claimVerdicts(ruled)[0]!.verdict, 'held');
    // An update or time budget reads like an epoch cap.
    for (const stopKind of ['updates', 'time'] as const) {
      assert.equal(claimVerdicts(grid({ training: { ...capped(FLAT), stopKind } }))[0]!.verdict, 'held', stopKind);
      assert.equal(
        claimVerdicts(grid({ training: { ...capped(GAINING), stopKind } }))[0]!.verdict,
        'not settled',
        stopKind,
      );
    }
  });

  test('the layout: verdicts first, the paper tables lead the quality section, Figure 2 heads the output matrix', () => {
    const report = grid();
    const layout = reportLayout(report, reportClaims(report));
    assert.equal(layout.sections[0]!.id, 'verdicts');
    assert.equal(layout.sections[0]!.blocks.length, 4);
    const quality = layout.sections.find((s) => s.id === 'quality')!;
    assert.equal(quality.blocks[0]!.kind === 'table' && quality.blocks[0]!.table.id, 'paper-table2');
    const matrix = layout.sections.find((s) => s.id === 'output-matrix')!;
    assert.equal(matrix.blocks[0]!.kind, 'text');
    assert.equal(matrix.blocks[1]!.kind === 'table' && matrix.blocks[1]!.table.id, 'paper-figure2');
  });
});

describe('verdicts from 95% intervals', () => {
  /** Gives run `id` of `report` the difference `delta` and its interval [lo, hi] (null: none). */
  function withInterval(report: Report, id: string, delta: number, interval: [number, number] | null): Report {
    const r = report.runs.find((x) => x.id === id)!;
    r.bleuDelta = delta;
    r.bleuDeltaInterval =
      interval === null
        ? null
        : {
            lo: interval[0],
            hi: interval[1],
            p: 0.04,
            run: { lo: 29, hi: 31 },
            baseline: { lo: 29, hi: 31 },
            resamples: 1000,
            seed: 12345,
            baselineCheckpoint: 'ab'.repeat(32),
          };
    return report;
  }
  const both = (de: [number, [number, number] | null], en: [number, [number, number] | null], report = grid()) =>
    withInterval(withInterval(report, 'de-en-fixed-l2', ...de), 'en-de-fixed-l2', ...en);

  test('held when every interval lies within the margin; the sentence gives each difference with its interval', () => {
    const [bleu] = claimVerdicts(both([0.2, [-0.3, 0.7]], [-0.1, [-0.45, 0.25]]));
    assert.equal(bleu!.verdict, 'held');
    assert.equal(
      bleu!.sentence,
      'Fixed target vectors lose at most 0.5 test BLEU against learned ones: held (BLEU against learned, with its 95% interval: fixed-l2 de→en +0.20 [-0.30, +0.70], fixed-l2 en→de -0.10 [-0.45, +0.25]; each of these runs stopped by the stopping rule).',
    );
  });

  test('an interval reaching both sides of the margin: not settled by this data, whatever the difference says', () => {
    // -0.30 alone would hold the claim, as it did before intervals.
    const [open] = claimVerdicts(both([0.2, [-0.3, 0.7]], [-0.3, [-0.8, 0.2]]));
    assert.equal(open!.verdict, 'not settled');
    assert.equal(
      open!.sentence,
      'Fixed target vectors lose at most 0.5 test BLEU against learned ones: not settled by this data (BLEU against learned, with its 95% interval: fixed-l2 de→en +0.20 [-0.30, +0.70], fixed-l2 en→de -0.30 [-0.80, +0.20]; each of these runs stopped by the stopping rule): the 95% interval of fixed-l2 en→de [-0.80, +0.20] reaches both sides of -0.50.',
    );
    // -0.60 alone would refute it.
    assert.equal(claimVerdicts(both([0.2, [-0.3, 0.7]], [-0.6, [-1.1, -0.1]]))[0]!.verdict, 'not settled');
  });

  test('did not hold when a converged interval lies wholly beyond the margin, the open ones named beside it', () => {
    const [refuted] = claimVerdicts(both([-0.3, [-0.8, 0.2]], [-0.9, [-1.4, -0.6]]));
    assert.equal(refuted!.verdict, 'did not hold');
    assert.match(
      refuted!.sentence,
      /: did not hold \(.*\): fixed-l2 en→de converged more than 0\.5 behind; the 95% interval of fixed-l2 de→en \[-0\.80, \+0\.20\] reaches both sides of -0\.50\.$/,
    );
    // Not converged, the same interval refutes nothing: the claim waits for the run, and the data's doubt is named too.
    const gaining = grid({ training: capped(FLAT), trainingOf: { 'en-de-fixed-l2': capped(GAINING) } });
    const [open] = claimVerdicts(both([-0.3, [-0.8, 0.2]], [-0.9, [-1.4, -0.6]], gaining));
    assert.equal(open!.verdict, 'not settled');
    assert.match(
      open!.sentence,
      /: not settled \(.*\): fixed-l2 en→de gained 1\.12 validation BLEU in its last 5 epochs; the 95% interval of fixed-l2 de→en \[-0\.80, \+0\.20\] reaches both sides of -0\.50\.$/,
    );
  });

  test('a run without stored translations is judged by its difference, and says so', () => {
    const [mixed] = claimVerdicts(both([0.2, [-0.3, 0.7]], [-0.6, null]));
    assert.equal(mixed!.verdict, 'did not hold');
    assert.match(
      mixed!.sentence,
      /fixed-l2 de→en \+0\.20 \[-0\.30, \+0\.70\], fixed-l2 en→de -0\.60 \(no interval: hypotheses not stored\);/,
    );
  });

  test('runs of several seeds: mean ± sd over the seeds, and a verdict only where every seed agrees', () => {
    const seeds = [1, 2, 3];
    const runs = seeds.flatMap((seed) =>
      ['learned', 'fixed-l2'].map((head) => {
        const r = fixtureRun(
          `de-en-${head}-seed${seed}`,
          head,
          ['de', 'en'],
          {
            learnable: head === 'learned' ? 10_000 : 7000,
            bleu: head === 'learned' ? 30 + seed / 10 : 30 + seed / 10 + [0.1, 0.2, 0.3][seed - 1]!,
            bytes: 4_000_000,
            spearman: head === 'learned' ? 0.7 : null,
          },
          { training: converged },
        );
        return { ...r, seed };
      }),
    );
    const report = reportSchema.parse({ ...grid(), runs: compareWithBaselines(runs) });
    // Each seed against the learned run of its own seed.
    assert.deepEqual(
      report.runs.filter((r) => r.head === 'fixed-l2').map((r) => [r.baseline, r.bleuDelta!.toFixed(2)]),
      [
        ['de-en-learned-seed1', '0.10'],
        ['de-en-learned-seed2', '0.20'],
        ['de-en-learned-seed3', '0.30'],
      ],
    );
    const interval = (lo: number, hi: number) => ({
      lo,
      hi,
      p: 0.5,
      run: { lo: 29, hi: 31 },
      baseline: { lo: 29, hi: 31 },
      resamples: 1000,
      seed: 12345,
      baselineCheckpoint: 'ab'.repeat(32),
    });
    const fixed = report.runs.filter((r) => r.head === 'fixed-l2');
    fixed.forEach((r, k) => (r.bleuDeltaInterval = interval(-0.4 + k / 10, 0.6 + k / 10)));
    const [bleu] = claimVerdicts(report);
    assert.equal(bleu!.verdict, 'held');
    assert.match(
      bleu!.sentence,
      /\(BLEU against learned, with its 95% interval: fixed-l2 de→en \+0\.20 ± 0\.10 over 3 seeds \(seed 1: \+0\.10 \[-0\.40, \+0\.60\], seed 2: \+0\.20 \[-0\.30, \+0\.70\], seed 3: \+0\.30 \[-0\.20, \+0\.80\]\); /,
    );
    assert.match(verdictSentences(report).at(-1)!, /, 3 seeds, beam 5,/);
    // One seed's interval reaches below the margin: the seeds do not agree, and the data does not settle it.
    fixed[0]!.bleuDeltaInterval = interval(-0.9, 0.6);
    const [open] = claimVerdicts(report);
    assert.equal(open!.verdict, 'not settled');
    assert.match(
      open!.sentence,
      /: not settled by this data \(.*\): fixed-l2 de→en's 3 seeds do not all fall on one side of -0\.50\.$/,
    );
    // The tables: Table 2's cell and the claim table's row for the seeds.
    assert.deepEqual(texts(report, 'paper-table2')[1]!.slice(0, 3), ['fixed-l2', 'fixed', '30.40 ± 0.20 (3 seeds)']);
    const bleuTable = reportTables(report).find((t) => t.id === 'bleu')!;
    assert.deepEqual(
      bleuTable.rows.map((row) => row.map((c) => c.text)),
      [
        ['learned', '30.20 ± 0.10 (3 seeds)'],
        ['fixed-l2', '30.40 ± 0.20 (3 seeds)'],
      ],
    );
    const claim = claimTable(report)!;
    assert.deepEqual(
      claim.rows.at(-1)!.map((c) => c.text),
      ['fixed-l2 de→en, seeds 1, 2 and 3', 'mean ± sd', '+0.20 ± 0.10', '', '', '', 'open', '30.0%', 'yes'],
    );
  });

  test('the committed Table 2 report (from before intervals) loads, and its verdicts say it has none', async () => {
    const path = fileURLToPath(new URL('../docs/reports/mt-heads-converged/report.json', import.meta.url));
    const report = reportSchema.parse(JSON.parse(await readFile(path, 'utf8')));
    assert.ok(report.runs.every((r) => r.bleuDeltaInterval === undefined));
    const [bleu] = claimVerdicts(report);
    assert.equal(bleu!.verdict, 'did not hold');
    assert.match(bleu!.sentence, /fixed-l2 de→en \+0\.34, .*; no interval: hypotheses not stored\): hadamard de→en, /);
  });
});
