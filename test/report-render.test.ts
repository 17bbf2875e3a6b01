import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { bleuSegmentStats, corpusBleu } from '../core/metrics/bleu.ts';
import { pairedBleuBootstrap } from '../core/metrics/paired-bootstrap.ts';
import { getTokenizer } from '../core/text/tokenize.ts';
import { trainBpe } from '../core/subword/bpe-trainer.ts';
import { SubwordTokenizer, subwordVocabulary } from '../core/subword/subword-tokenizer.ts';
import { Vocabulary } from '../core/vocab.ts';
import { analyseMatrix, evenSample } from '../report/analyse-matrix.ts';
import { bleuHolds, claimTable, decreaseHolds } from '../experiments/claims/claim.ts';
import { compareWithBaselines } from '../report/collect.ts';
import { scoreTest, wordCounts } from '../report/collect-test.ts';
import { reportCharts } from '../report/charts.ts';
import { lastGain } from '../report/convergence.ts';
import { type Report, reportSchema } from '../report/schema.ts';
import { niceTicks, linearScale, logScale } from '../report/svg/scale.ts';
import { escapeXml } from '../report/svg/svg.ts';
import { reportTables } from '../report/tables.ts';
import { writeReport } from '../report/write-report.ts';
import { reportClaims } from '../experiments/claims/report-claims.ts';
import { assertShows, readShown, valueAt } from './helpers/report-check.ts';
import { fixtureRun } from './helpers/report-fixture.ts';

const run = fixtureRun;

function fixture(): Report {
  const runs = [
    run('de-en-learned', 'learned', ['de', 'en'], { learnable: 1000, bleu: 20.05, bytes: 4_000_000, spearman: 0.81 }),
    run('de-en-fixed-l2', 'fixed-l2', ['de', 'en'], { learnable: 700, bleu: 19.6, bytes: 2_800_000, spearman: null }),
    // No learned run on en-de: no baseline, no decrease.
    run('en-de-<hadamard>', 'hadamard', ['en', 'de'], { learnable: 701, bleu: 15.5, bytes: 2_900_000, spearman: null }),
  ];
  return reportSchema.parse({
    format: 'frost-report',
    version: 1,
    title: 'fixture & <report>',
    created: '2026-11-22T04:00:00.000Z',
    machine: { cpu: 'Test CPU', cores: 2, node: 'v20', onnxruntime: '1.30.0' },
    settings: { beam: 5, rareThreshold: 100 },
    runs: compareWithBaselines(runs),
  });
}

describe('comparison with the learned baseline', () => {
  test('decrease and BLEU difference against the learned run of the same arch, preset and pair', () => {
    const r = fixture();
    assert.equal(r.runs[0]!.baseline, 'de-en-learned');
    assert.equal(r.runs[0]!.learnableDecrease, 0);
    assert.equal(r.runs[1]!.baseline, 'de-en-learned');
    assert.ok(Math.abs(r.runs[1]!.learnableDecrease! - 0.3) < 1e-12);
    assert.ok(Math.abs(r.runs[1]!.bleuDelta! - -0.45) < 1e-9);
    assert.equal(r.runs[2]!.baseline, null);
    assert.equal(r.runs[2]!.learnableDecrease, null);
  });

  test("the paper's claim: within 0.5 BLEU, 19–33% fewer learnable parameters", () => {
    assert.ok(bleuHolds(-0.5));
    assert.ok(!bleuHolds(-0.51));
    assert.ok(bleuHolds(3));
    assert.ok(decreaseHolds(0.19) && decreaseHolds(0.33) && decreaseHolds(0.282));
    assert.ok(!decreaseHolds(0.1849) && !decreaseHolds(0.3351));
    const t = claimTable(fixture())!;
    // Only the frozen head with a baseline: fixed-l2 at -0.45 BLEU and 30.0% fewer
    assert.deepEqual(
      t.rows.map((r) => r.map((c) => c.text)),
      [['de-en-fixed-l2', 'de-en-learned', '-0.45', 'yes', '30.0%', 'yes']],
    );
  });
});

describe("the BLEU difference's interval", () => {
  // Three systems on one set of references: learned and fixed-l2 a few words off, a third of another test set.
  const refs = Array.from({ length: 120 }, (_, i) =>
    ['a dog runs on the grass', 'two men play ball in a park', 'the girl in red jumps'][i % 3]!.replace('a', `a${i}`),
  );
  const off = (k: number) =>
    refs.map((s) =>
      s
        .split(' ')
        .map((w, i) => (i % k === k - 1 ? 'x' : w))
        .join(' '),
    );
  const learnedHyps = off(4);
  const fixedHyps = off(3);
  const segments = (hyps: string[], testSet = 't') => ({
    testSet,
    stats: bleuSegmentStats(hyps, [refs], { lowercase: true }),
  });
  const runs = () => [
    run('de-en-learned', 'learned', ['de', 'en'], {
      learnable: 1000,
      bleu: corpusBleu(learnedHyps, [refs], { lowercase: true }).score,
      bytes: 4_000_000,
      spearman: 0.8,
    }),
    run('de-en-fixed-l2', 'fixed-l2', ['de', 'en'], {
      learnable: 700,
      bleu: corpusBleu(fixedHyps, [refs], { lowercase: true }).score,
      bytes: 2_800_000,
      spearman: null,
    }),
  ];

  test("computed from both runs' test translations: the paired bootstrap of the same BLEU as bleuDelta", () => {
    const bySegments = new Map([
      ['de-en-learned', segments(learnedHyps)],
      ['de-en-fixed-l2', segments(fixedHyps)],
    ]);
    const [learned, fixed] = compareWithBaselines(runs(), { segments: bySegments });
    assert.equal(learned!.bleuDeltaInterval, null, 'the baseline has no interval against itself');
    const expected = pairedBleuBootstrap(fixedHyps, learnedHyps, [refs], { lowercase: true });
    assert.ok(Math.abs(fixed!.bleuDelta! - expected.delta) < 1e-9);
    assert.deepEqual(fixed!.bleuDeltaInterval, {
      lo: expected.lo,
      hi: expected.hi,
      p: expected.p,
      run: { lo: expected.system.lo, hi: expected.system.hi },
      baseline: { lo: expected.baseline.lo, hi: expected.baseline.hi },
      resamples: 1000,
      seed: 12345,
      baselineCheckpoint: learned!.checkpoint.sha256,
    });
    assert.ok(fixed!.bleuDeltaInterval!.hi < -0.5, 'fixed-l2 is further off on every sentence');
    // No translations of one of them, or translations of another test set: no interval, and the report says why.
    assert.equal(
      compareWithBaselines(runs(), { segments: new Map([['de-en-fixed-l2', segments(fixedHyps)]]) })[1]!
        .bleuDeltaInterval,
      null,
    );
    const otherSet = new Map([
      ['de-en-learned', segments(learnedHyps, 'other')],
      ['de-en-fixed-l2', segments(fixedHyps)],
    ]);
    assert.equal(compareWithBaselines(runs(), { segments: otherSet })[1]!.bleuDeltaInterval, null);
    assert.equal(compareWithBaselines(runs())[1]!.bleuDeltaInterval, null);
  });

  test("a committed row's interval is kept for the same two checkpoints only", () => {
    const bySegments = new Map([
      ['de-en-learned', segments(learnedHyps)],
      ['de-en-fixed-l2', segments(fixedHyps)],
    ]);
    const reported = compareWithBaselines(runs(), { segments: bySegments });
    const interval = reported[1]!.bleuDeltaInterval;
    // A later report takes both rows from the committed report (asCollected keeps the interval).
    const kept = reported.map(({ baseline: _b, learnableDecrease: _d, bleuDelta: _x, ...row }) => row);
    assert.deepEqual(compareWithBaselines(kept)[1]!.bleuDeltaInterval, interval);
    // The learned run's folder is gone (its row kept), fixed-l2's is here: the committed row of fixed-l2 still
    // holds the interval of these two checkpoints.
    const earlier = (id: string) => reported.find((r) => r.id === id);
    const fresh = [kept[0]!, runs()[1]!];
    const onlyFixed = { segments: new Map([['de-en-fixed-l2', segments(fixedHyps)]]), earlier };
    assert.deepEqual(compareWithBaselines(fresh, onlyFixed)[1]!.bleuDeltaInterval, interval);
    // fixed-l2 was trained further since: its committed row's interval is of another checkpoint.
    const further = [kept[0]!, { ...runs()[1]!, checkpoint: { ...runs()[1]!.checkpoint, sha256: 'ef'.repeat(32) } }];
    assert.equal(compareWithBaselines(further, onlyFixed)[1]!.bleuDeltaInterval, null);
    // The baseline was trained again: another checkpoint, so the interval is not this comparison's.
    kept[0]!.checkpoint = { ...kept[0]!.checkpoint, sha256: 'cd'.repeat(32) };
    assert.equal(compareWithBaselines(kept)[1]!.bleuDeltaInterval, null);
  });

  test('the claim table shows the interval and p, each naming its report.json value, and decides from the interval', () => {
    const bySegments = new Map([
      ['de-en-learned', segments(learnedHyps)],
      ['de-en-fixed-l2', segments(fixedHyps)],
    ]);
    const report = reportSchema.parse({ ...fixture(), runs: compareWithBaselines(runs(), { segments: bySegments }) });
    const t = claimTable(report)!;
    assert.deepEqual(t.header, [
      'run',
      'baseline',
      'BLEU vs learned',
      '95% low',
      '95% high',
      'p',
      'within 0.5',
      'fewer learnable',
      'at least 19%',
    ]);
    const [row] = t.rows;
    for (const c of row!) if (c.path) assertShows(report, c.path, c.text);
    assert.deepEqual(
      row!.map((c) => c.path ?? c.text),
      [
        'de-en-fixed-l2',
        'de-en-learned',
        'runs.1.bleuDelta',
        'runs.1.bleuDeltaInterval.lo',
        'runs.1.bleuDeltaInterval.hi',
        'runs.1.bleuDeltaInterval.p',
        'no',
        'runs.1.learnableDecrease',
        'yes',
      ],
    );
    // An interval reaching both sides of -0.5 is open, whatever the difference itself says.
    report.runs[1]!.bleuDelta = -0.3;
    report.runs[1]!.bleuDeltaInterval = { ...report.runs[1]!.bleuDeltaInterval!, lo: -0.8, hi: 0.2 };
    assert.equal(claimTable(report)!.rows[0]![6]!.text, 'open');
    report.runs[1]!.bleuDeltaInterval = { ...report.runs[1]!.bleuDeltaInterval!, lo: -0.45, hi: 0.2 };
    assert.equal(claimTable(report)!.rows[0]![6]!.text, 'yes');
    // Without one the difference decides, and a table where no run has one has no interval columns.
    report.runs[1]!.bleuDeltaInterval = null;
    const none = claimTable(report)!;
    assert.equal(none.header.length, 6, 'reports from before intervals read as before');
    assert.equal(none.rows[0]![3]!.text, 'yes', '-0.30 is within 0.5');
    assert.match(none.note!, /No run has a 95% interval \(no interval: hypotheses not stored\)/);
  });
});

describe('test-set scores', () => {
  test('vocabulary usage and rare words leave out specials and <unk>; references are tokenised as in training', () => {
    const tgtVocab = Vocabulary.fromJSON(
      ['<pad>', '<unk>', '<s>', '</s>', 'a', 'dog', 'puppy'],
      [0, 9, 0, 0, 150, 99, 5],
    );
    // Texts differ from the references only in case: BLEU is lower-cased, so 100.
    const hyps = {
      texts: ['A dog a puppy a dog', 'A puppy a dog a puppy runs'],
      tokens: [
        ['a', 'dog', '<unk>'],
        ['a', 'puppy'],
      ],
    };
    const set = {
      split: 'test',
      sources: ['x', 'y'],
      references: ['a dog a puppy a dog', 'a puppy a dog a puppy runs'],
      fingerprint: 'f',
    };
    const r = scoreTest(hyps, set, {
      tgtVocab,
      tokenizer: getTokenizer('whitespace'),
      tgtLang: 'tgt',
      beam: 5,
      rareThreshold: 100,
    });
    // produced tokens: a dog a puppy (4 words, 3 distinct; dog 99 and puppy 5 are rare)
    assert.equal(r.words, 4);
    assert.equal(r.vocabUsage, 3);
    assert.equal(r.rareRate, 0.5);
    // references: 13 words, 4 distinct; dog ×3, puppy ×3 and runs (unseen in training) are rare
    assert.equal(r.refVocabUsage, 4);
    assert.equal(r.refRareRate, 7 / 13);
    assert.equal(r.sentences, 2);
    assert.ok(Math.abs(r.bleu - 100) < 1e-9, `BLEU ${r.bleu}`);
    // cased BLEU sees the capital A's: below 100
    assert.ok(r.bleuCased! < 90, `cased BLEU ${r.bleuCased}`);
    assert.equal(r.pieces, undefined);
  });

  test('subword runs count words of the text against training word counts, and pieces against piece counts', () => {
    const { model } = trainBpe(['A dog and a puppy', 'a dog runs', 'the dog'], { vocabSize: 290 });
    const tgtVocab = subwordVocabulary(model, ['A dog and a puppy', 'a dog runs', 'the dog']);
    const tokenizer = new SubwordTokenizer({ en: model });
    const texts = ['A dog runs.', 'A puppy, a dog'];
    const hyps = { texts, tokens: texts.map((t) => tokenizer.tokenize(t, 'en')) };
    const set = {
      split: 'test',
      sources: ['x', 'y'],
      references: ['A dog runs.', 'A puppy and a dog'],
      fingerprint: 'f',
    };
    const trainWords = wordCounts(['A dog and a puppy', 'a dog runs', 'the dog', 'a dog']);
    const r = scoreTest(hyps, set, { tgtVocab, tokenizer, tgtLang: 'en', beam: 5, rareThreshold: 3, trainWords });
    // 13a words of the texts: A dog runs . | A puppy , a dog → 9 words, 7 distinct (A and a differ)
    assert.equal(r.words, 9);
    assert.equal(r.vocabUsage, 7);
    // training counts: dog 4, a 3, A 1, runs 1, puppy 1; '.' and ',' unseen: rare (< 3) are A ×2, runs, ., puppy, ','
    assert.equal(r.rareRate, 6 / 9);
    assert.equal(r.pieces!.words, hyps.tokens.flat().length);
    assert.ok(r.pieces!.vocabUsage > 0 && r.pieces!.vocabUsage <= r.pieces!.words);
    assert.ok(Math.abs(r.bleuCased! - 100) > 1 && r.bleuCased! > 0);
  });
});

describe('output-matrix analysis', () => {
  const vocab = Vocabulary.fromJSON(
    ['<pad>', '<unk>', '<s>', '</s>', 'dog', 'puppy', 'shirt'],
    [0, 7, 0, 0, 50, 5, 500],
  );

  test('norms ordered like frequencies give ρ = 1; cosine of word pairs; missing words give null', () => {
    // Specials' rows are ignored; words: dog (50) norm 2, puppy (5) norm 1, shirt (500) norm 5
    const data = new Float32Array([9, 9, 9, 9, 9, 9, 9, 9, 2, 0, 0, 1, 3, 4]);
    const a = analyseMatrix({ kind: 'learned', description: 'm', rows: 7, dim: 2, data }, vocab, [
      { a: 'dog', b: 'puppy', related: true },
      { a: 'dog', b: 'shirt', related: false },
      { a: 'dog', b: 'kitten', related: true },
    ]);
    assert.equal(a.words, 3);
    assert.equal(a.spearman, 1);
    assert.deepEqual(a.points, [
      { freq: 5, norm: 1 },
      { freq: 50, norm: 2 },
      { freq: 500, norm: 5 },
    ]);
    assert.equal(a.pairs[0]!.cosine, 0); // [2,0]·[0,1]
    assert.ok(Math.abs(a.pairs[1]!.cosine! - 0.6) < 1e-6); // [2,0]·[3,4] / (2·5)
    assert.equal(a.pairs[2]!.cosine, null);
  });

  test('unit-norm rows (float32 rounding aside) have no correlation to report', () => {
    const s = Math.SQRT1_2;
    const data = new Float32Array([1, 0, 1, 0, 1, 0, 1, 0, s, s, 0.6, 0.8, 1, 0]);
    assert.equal(analyseMatrix({ kind: 'frozen', description: 'm', rows: 7, dim: 2, data }, vocab, []).spearman, null);
  });

  test('a matrix of the wrong size is refused', () => {
    assert.throws(
      () => analyseMatrix({ kind: 'frozen', description: 'm', rows: 5, dim: 1, data: new Float32Array(5) }, vocab, []),
      /5 rows, the vocabulary 7/,
    );
  });

  test('the scatter sample spreads over the whole frequency range', () => {
    assert.deepEqual(evenSample(3, 5), [0, 1, 2]);
    assert.deepEqual(evenSample(11, 3), [0, 5, 10]);
  });
});

describe('chart scales', () => {
  test('ticks at 1, 2 or 5 times a power of ten', () => {
    assert.deepEqual(niceTicks(0, 1, 5), [0, 0.2, 0.4, 0.6, 0.8, 1]);
    assert.deepEqual(niceTicks(0, 300_000, 5), [0, 100_000, 200_000, 300_000]);
    // widened to whole steps of 0.2
    assert.deepEqual(linearScale([0.2, 0.9], [0, 100]).domain, [0.2, 1]);
    const bars = linearScale([0, 275_416], [300, 0], { zero: true });
    assert.deepEqual(bars.domain, [0, 300_000]);
    assert.equal(bars(0), 300);
    assert.equal(bars(300_000), 0);
  });

  test('log scales span whole decades', () => {
    const s = logScale([3, 450], [0, 300]);
    assert.deepEqual(s.ticks, [1, 10, 100, 1000]);
    assert.equal(s(10), 100);
    assert.throws(() => logScale([0, -1], [0, 1]), /no positive values/);
  });

  test('markup characters in data are escaped', () => {
    assert.equal(escapeXml(`<a href="x">&'`), '&lt;a href=&quot;x&quot;&gt;&amp;&#39;');
  });
});

describe('rendering', () => {
  let dir: string;
  const report = fixture();
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'frost-report-render-'));
    await writeReport(report, dir, reportClaims(report));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  test('latency: rows timed in different sessions say when; rows timed together need not', () => {
    const timed = (at: string[]) =>
      reportTables({
        ...report,
        runs: report.runs.map((r, i) => ({ ...r, latency: { ...r.latency, timedAt: at[i] } })),
      }).find((t) => t.id === 'latency')!;
    const together = timed(['2026-11-25T23:45:41Z', '2026-11-26T00:16:02Z', '2026-11-26T00:47:30Z']);
    assert.deepEqual(together.header, ['run', 'batch 1', 'batch 64', 'test BLEU', 'load']);
    const apart = timed(['2026-11-25T22:29:05Z', '2026-11-26T01:50:00Z', '2026-11-26T01:52:00Z']);
    assert.equal(apart.header.at(-1), 'timed');
    assert.deepEqual(
      apart.rows.map((r) => r.at(-1)!.text),
      ['2026-11-25 22:29', '2026-11-26 01:50', '2026-11-26 01:52'],
    );
    assert.match(apart.note ?? '', /compare latency only among rows timed together/);
    // A row from a report of older frost did not record its timing: a dash, and the column stays.
    assert.equal(timed(['2026-11-25T22:29:05Z']).rows[1]!.at(-1)!.text, '–');
  });

  test('tables: Table 2 has one row per head and one column per pair, a dash where a run is missing', () => {
    const bleu = reportTables(report).find((t) => t.id === 'bleu')!;
    assert.deepEqual(bleu.header, ['head', 'de→en', 'en→de']);
    assert.deepEqual(
      bleu.rows.map((r) => r.map((c) => c.text)),
      [
        ['learned', '20.05', '–'],
        ['fixed-l2', '19.60', '–'],
        ['hadamard', '–', '15.50'],
      ],
    );
  });

  test('tables: chrF and chrF++ beside Table 2, two columns per pair', () => {
    const chrf = reportTables(report).find((t) => t.id === 'chrf')!;
    assert.deepEqual(chrf.header, ['head', 'de→en chrF2', 'de→en chrF2++', 'en→de chrF2', 'en→de chrF2++']);
    assert.deepEqual(
      chrf.rows.map((r) => r.map((c) => c.text)),
      [
        ['learned', '50.05', '48.05', '–', '–'],
        ['fixed-l2', '49.60', '47.60', '–', '–'],
        ['hadamard', '–', '–', '45.50', '43.50'],
      ],
    );
    assert.equal(chrf.rows[0]![2]!.path, 'runs.0.test.chrfpp');
  });

  test('every numeric cell names the report.json value it shows, and shows it', () => {
    let cells = 0;
    for (const t of reportTables(report)) {
      for (const row of t.rows) {
        for (const c of row) {
          if (!c.path) continue;
          assertShows(report, c.path, c.text);
          cells++;
        }
      }
    }
    assert.ok(cells > 60, `only ${cells} cells are tied to report.json`);
    assert.deepEqual(readShown('1.11 MB'), { value: 1.11e6, tolerance: 0.005e6 * (1 + 1e-9) });
    assert.throws(() => assertShows(report, 'runs.0.test.bleu', '20.10'), /runs\.0\.test\.bleu = 20\.05/);
  });

  test('charts: stacked components, one series per head, two batch sizes, a norm scatter per analysed run', () => {
    const charts = reportCharts(report);
    const ids = charts.map((c) => c.id);
    assert.deepEqual(ids, [
      'size',
      'bleu-size',
      'latency-size',
      'norm-frequency-de-en-learned',
      'norm-frequency-de-en-fixed-l2',
      'norm-frequency-en-de-<hadamard>',
    ]);
    const count = (svg: string, re: RegExp) => (svg.match(re) ?? []).length;
    const [size, bleu, latency] = charts;
    assert.equal(count(size!.svg, /<g class="series"/g), 6);
    assert.equal(count(size!.svg, /<rect class="bar"/g), 18);
    assert.equal(count(bleu!.svg, /<g class="series"/g), 3);
    assert.equal(count(latency!.svg, /<circle class="point"/g), 6);
    assert.match(bleu!.svg, /data-series="learned"[^>]*><circle class="point"[^>]*data-x="4"[^>]*data-y="20.05"/);
  });

  test('report.html is self-contained and escapes the data; report.md links the chart files', async () => {
    const html = await readFile(join(dir, 'report.html'), 'utf8');
    assert.doesNotMatch(html, /<script|<link|<img|src=|href="(?!#)/);
    assert.match(html, /<title>fixture &amp; &lt;report&gt;<\/title>/);
    assert.match(html, /en-de-&lt;hadamard&gt;/);
    assert.equal((html.match(/<svg /g) ?? []).length, 6);
    const md = await readFile(join(dir, 'report.md'), 'utf8');
    assert.match(md, /\| de-en-fixed-l2 \| de→en \| fixed-l2 \| 700 \| 0 \| 0 \| 30\.0% \|/);
    for (const m of md.matchAll(/!\[[^\]]*\]\((charts\/[^)]+\.svg)\)/g))
      assert.ok(existsSync(join(dir, m[1]!)), `${m[1]} is linked but missing`);
    const json = reportSchema.parse(JSON.parse(await readFile(join(dir, 'report.json'), 'utf8')));
    assert.deepEqual(json, report);
  });
});

describe('convergence: the Runs table and the learning curves', () => {
  const points = (bleus: number[]) => bleus.map((bleu, i) => ({ epoch: i + 1, step: 300 * (i + 1), bleu }));
  /** The fixture with validation curves: flat at an epoch cap, gaining at an update budget, short at a time budget. */
  function curveFixture(): Report {
    const report = fixture();
    const [flat, gaining, short] = report.runs.map((r) => r.training);
    Object.assign(flat!, {
      budgetMinutes: null,
      budgetEpochs: 8,
      stopKind: 'epochs',
      stopReason: 'reached 8 epochs',
      valBleuCurve: points([10, 15, 20, 19.9, 20, 19.8, 20.1, 20.05]),
    });
    Object.assign(gaining!, {
      budgetMinutes: null,
      budgetUpdates: 2400,
      stopKind: 'updates',
      stopReason: 'reached 2400 updates',
      valBleuCurve: points([8, 12, 16.5, 15.5, 16.2, 16.9, 17.3, 17.62]),
    });
    Object.assign(short!, {
      stopKind: 'time',
      valBleuCurve: points([5, 9, 11]),
    });
    for (const t of [flat!, gaining!, short!]) t.lastGain = lastGain(t.valBleuCurve!);
    return reportSchema.parse(report);
  }
  const training = (report: Report) => reportTables(report).find((t) => t.id === 'training')!;
  const column = (t: ReturnType<typeof training>, name: string) => {
    const k = t.header.indexOf(name);
    assert.ok(k >= 0, `no column '${name}' in ${t.header.join(', ')}`);
    return t.rows.map((row) => row[k]!);
  };

  test('the gain of the last 5 epochs, whether the run converged, and the budget it trained under', () => {
    const report = curveFixture();
    const t = training(report);
    assert.deepEqual(t.header, [
      'run',
      'epochs',
      'steps',
      'minutes',
      'budget',
      'best val BLEU',
      'gain, last 5 epochs',
      'converged',
      'exported step',
      'stopped because',
    ]);
    assert.deepEqual(
      column(t, 'gain, last 5 epochs').map((c) => [c.text, c.path]),
      [
        ['+0.10', 'runs.0.training.lastGain'],
        ['+1.12', 'runs.1.training.lastGain'],
        ['–', 'runs.2.training.lastGain'],
      ],
    );
    assert.deepEqual(
      column(t, 'converged').map((c) => c.text),
      ['yes, flat at its budget', 'no, still gaining', '–'],
    );
    assert.deepEqual(
      column(t, 'budget').map((c) => [c.text, c.path]),
      [
        ['8 epochs', 'runs.0.training.budgetEpochs'],
        ['2,400 updates', 'runs.1.training.budgetUpdates'],
        ['20.0 min', 'runs.2.training.budgetMinutes'],
      ],
    );
    assert.match(t.note!, /gained less than 0\.5 BLEU/);
    for (const tab of reportTables(report))
      for (const row of tab.rows) for (const c of row) if (c.path) assertShows(report, c.path, c.text);

    // Two budgets (whichever came first): both shown, no single value to name; no budget at all: a dash.
    report.runs[0]!.training.budgetMinutes = 60;
    report.runs[1]!.training.budgetUpdates = null;
    const budgets = column(training(report), 'budget');
    assert.deepEqual(budgets[0], { text: '8 epochs, 60.0 min' });
    assert.deepEqual(budgets[1], { text: '–' });
  });

  test('a report without validation curves keeps its Runs table and has no learning-curve chart', () => {
    const old = fixture();
    const t = training(old);
    assert.deepEqual(t.header, [
      'run',
      'epochs',
      'steps',
      'minutes',
      'budget',
      'best val BLEU',
      'exported step',
      'stopped because',
    ]);
    assert.deepEqual(column(t, 'budget')[0], { text: '20.0 min', path: 'runs.0.training.budgetMinutes' });
    assert.doesNotMatch(t.note!, /gain/);
    assert.ok(!reportCharts(old).some((c) => c.id === 'learning-curves'));
    // A run without a curve among runs with one: a dash, naming nothing report.json lacks.
    const mixed = curveFixture();
    delete mixed.runs[2]!.training.valBleuCurve;
    delete mixed.runs[2]!.training.lastGain;
    assert.deepEqual(column(training(mixed), 'gain, last 5 epochs')[2], { text: '–' });
  });

  test('the learning-curve chart: one line per run with a curve, its points tied to report.json', () => {
    const report = curveFixture();
    const chart = reportCharts(report).find((c) => c.id === 'learning-curves')!;
    assert.ok(chart, 'no learning-curve chart');
    const lines = [...chart.svg.matchAll(/<g class="series" data-series="([^"]+)"[^>]*><path class="line"([^>]*)>/g)];
    assert.deepEqual(
      lines.map((m) => m[1]),
      ['de-en-learned', 'de-en-fixed-l2', 'en-de-&lt;hadamard&gt;'],
    );
    assert.equal((chart.svg.match(/<path class="line"/g) ?? []).length, 3, 'one path per run');
    // a path through every point: M then one L per further epoch
    const d = [...chart.svg.matchAll(/<path class="line" d="([^"]+)"/g)].map((m) => m[1]!);
    assert.deepEqual(
      d.map((p) => (p.match(/[ML]/g) ?? []).join('')),
      ['MLLLLLLL', 'MLLLLLLL', 'MLL'],
    );
    // colours by head; the second pair is dashed, the first solid
    assert.doesNotMatch(lines[0]![2]!, /stroke-dasharray/);
    assert.match(lines[2]![2]!, /stroke-dasharray="6 3"/);
    const circles = [
      ...chart.svg.matchAll(
        /<circle class="point"[^>]*data-x="([^"]+)" data-y="([^"]+)"[^>]*data-x-path="([^"]+)"[^>]*data-y-path="([^"]+)"/g,
      ),
    ];
    assert.equal(circles.length, 8 + 8 + 3);
    for (const [, x, y, xPath, yPath] of circles) {
      assertShows(report, xPath!, x!);
      assert.equal(Number(y), valueAt(report, yPath!));
    }
    // a run without a curve gets no line
    delete report.runs[1]!.training.valBleuCurve;
    const fewer = reportCharts(report).find((c) => c.id === 'learning-curves')!;
    assert.equal((fewer.svg.match(/<path class="line"/g) ?? []).length, 2);
    assert.doesNotMatch(fewer.svg, /data-series="de-en-fixed-l2"/);
  });

  test('both renderers show the chart in the Runs section, after the training table', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'frost-report-curves-'));
    try {
      const report = curveFixture();
      const written = await writeReport(report, dir, reportClaims(report));
      assert.ok(written.charts.some((c) => c.endsWith('learning-curves.svg')));
      const md = await readFile(join(dir, 'report.md'), 'utf8');
      const runs = md.slice(md.indexOf('## Runs'));
      assert.ok(runs.indexOf('### Training') < runs.indexOf('![learning-curves](charts/learning-curves.svg)'));
      assert.ok(existsSync(join(dir, 'charts', 'learning-curves.svg')));
      const html = await readFile(join(dir, 'report.html'), 'utf8');
      assert.equal((html.match(/<svg /g) ?? []).length, 7);
      assert.match(html, /<section id="runs">.*<table id="table-training".*<figure id="chart-learning-curves"><svg /s);
      const json = reportSchema.parse(JSON.parse(await readFile(join(dir, 'report.json'), 'utf8')));
      assert.deepEqual(json.runs[1]!.training.valBleuCurve, report.runs[1]!.training.valBleuCurve);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
