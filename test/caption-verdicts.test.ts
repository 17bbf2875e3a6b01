/**
 * The captioning claims judged on caption-heads' rows (experiments/claims/caption-verdicts.ts): held, did not hold
 * or not settled, from the numbers, the runs' convergence and the comparisons' agreement; and results.md prints them.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type CaptionRow, formatResults } from '../experiments/caption-results.ts';
import { withBleu4Intervals } from '../experiments/caption-intervals.ts';
import { captionClaimVerdicts, captionVerdictSentences } from '../experiments/claims/caption-verdicts.ts';
import { captionBleuStats } from '../core/metrics/caption-eval.ts';
import { cocoBleuFromStats } from '../core/metrics/coco-bleu.ts';
import { pairedBootstrap } from '../core/metrics/paired-bootstrap.ts';

interface RowSpec {
  arch?: string;
  head: string;
  learnable?: number;
  bleu4?: number;
  distinct?: number;
  rareShare?: number;
  stopKind?: CaptionRow['stopKind'];
  lastGain?: number | null;
  /** The BLEU-4 difference's 95% interval against learned (×100); null: none. */
  interval?: [number, number] | null;
}

function row(spec: RowSpec): CaptionRow {
  return {
    arch: spec.arch ?? 'show-tell',
    head: spec.head,
    stopKind: spec.stopKind === undefined ? 'epochs' : spec.stopKind,
    ...(spec.lastGain === undefined ? { lastGain: 0.1 } : { lastGain: spec.lastGain }),
    learnable: spec.learnable ?? (spec.head === 'learned' ? 4_000_000 : 3_000_000),
    frozen: 0,
    epochs: '10 (reached 10 epochs)',
    steps: 10_000,
    trainMinutes: 60,
    scores: {
      ...{ bleu1: 0.6, bleu2: 0.4, bleu3: 0.3, bleu4: spec.bleu4 ?? 0.2, rougeL: 0.45, ciderD: 0.4 },
      vocab: {
        distinctWords: spec.distinct ?? 300,
        totalWords: 9000,
        rare: {
          threshold: 100,
          words: Math.round(9000 * (spec.rareShare ?? 0.01)),
          share: spec.rareShare ?? 0.01,
          distinct: 5,
        },
      },
      count: 1000,
    },
    ...(spec.interval === undefined
      ? {}
      : {
          bleu4Interval:
            spec.interval === null
              ? null
              : {
                  ...{ lo: spec.interval[0], hi: spec.interval[1], p: 0.2, resamples: 1000, seed: 12345 },
                  checkpoints: { run: 'ab'.repeat(32), learned: 'cd'.repeat(32) },
                },
        }),
    decodeSeconds: 60,
  };
}

const verdictOf = (rows: CaptionRow[], claim: RegExp) => {
  const v = captionClaimVerdicts(rows).find((x) => claim.test(x.claim));
  assert.ok(v, `a verdict on ${claim}`);
  return v;
};

describe('caption claims', () => {
  test('converged runs where fixed vectors use more words, more rare words and keep BLEU-4: held', () => {
    const rows = [
      row({ head: 'learned', bleu4: 0.2, distinct: 300, rareShare: 0.01 }),
      row({ head: 'fixed-uniform', bleu4: 0.198, distinct: 420, rareShare: 0.02 }),
    ];
    const bleu = verdictOf(rows, /BLEU-4/);
    assert.equal(bleu.verdict, 'held');
    assert.match(bleu.sentence, /show-tell fixed-uniform -0\.20/);
    const vocab = verdictOf(rows, /vocabulary/);
    assert.equal(vocab.verdict, 'held');
    assert.match(vocab.sentence, /the paper: 721 → 1,378 distinct words on MSCOCO/);
    assert.match(vocab.sentence, /show-tell fixed-uniform 300 → 420/);
    const rare = verdictOf(rows, /rare/);
    assert.equal(rare.verdict, 'held');
    assert.match(rare.sentence, /fewer than 100 occurrences.*1\.0% → 2\.0%/);
    const params = verdictOf(rows, /parameters/);
    assert.equal(params.verdict, 'held', '25% fewer is inside 19–33%');
    assert.match(params.sentence, /25\.0%/);
  });

  test('a fixed head that loses more than 0.5 BLEU-4, uses fewer words and saves 12%: did not hold', () => {
    const rows = [
      row({ head: 'learned', bleu4: 0.2, distinct: 300 }),
      row({ head: 'fixed-uniform', bleu4: 0.19, distinct: 250, learnable: 3_520_000 }),
    ];
    assert.equal(verdictOf(rows, /BLEU-4/).verdict, 'did not hold');
    assert.match(verdictOf(rows, /BLEU-4/).sentence, /-1\.00/);
    assert.equal(verdictOf(rows, /vocabulary/).verdict, 'did not hold');
    assert.equal(verdictOf(rows, /rare/).verdict, 'did not hold', 'an equal share is not more');
    assert.equal(verdictOf(rows, /parameters/).verdict, 'did not hold');
    // A larger saving than the paper's range is the claim's saving and more, and is named as such.
    const more = [row({ head: 'learned' }), row({ head: 'fixed-uniform', learnable: 2_600_000 })];
    const params = verdictOf(more, /parameters/);
    assert.equal(params.verdict, 'held');
    assert.match(params.sentence, /\(show-tell fixed-uniform 35\.0%; show-tell fixed-uniform above the paper's 33%: /);
  });

  test('architectures that disagree leave a direction claim open, counting the models that show it', () => {
    const rows = [
      row({ arch: 'show-tell', head: 'learned', distinct: 300 }),
      row({ arch: 'show-tell', head: 'fixed-uniform', distinct: 400 }),
      row({ arch: 'show-attend-tell', head: 'learned', distinct: 300 }),
      row({ arch: 'show-attend-tell', head: 'fixed-uniform', distinct: 280 }),
    ];
    const vocab = verdictOf(rows, /vocabulary/);
    assert.equal(vocab.verdict, 'not settled');
    assert.match(vocab.sentence, /: 1 of 2 models show it\.$/);
    assert.match(vocab.sentence, /show-attend-tell fixed-uniform 300 → 280/);
  });

  test('a run still gaining at its cap, or with no curve to judge, leaves the score claims open and names it', () => {
    const gaining = [
      row({ head: 'learned', lastGain: 1.25 }),
      row({ head: 'fixed-uniform', distinct: 500, rareShare: 0.05 }),
    ];
    for (const claim of [/BLEU-4/, /vocabulary/, /rare/]) {
      const v = verdictOf(gaining, claim);
      assert.equal(v.verdict, 'not settled');
      assert.match(v.sentence, /show-tell learned gained 1\.25 validation BLEU-4 in its last 5 epochs\.$/);
    }
    assert.equal(verdictOf(gaining, /parameters/).verdict, 'held', 'parameter counts do not depend on training');
    const noCurve = [row({ head: 'learned', lastGain: null }), row({ head: 'fixed-uniform' })];
    assert.match(
      verdictOf(noCurve, /BLEU-4/).sentence,
      /not settled .*: show-tell learned without a validation curve long enough to judge\.$/,
    );
    // One architecture converged 1 BLEU-4 behind refutes the BLEU claim while the other still gains.
    const refuted = [
      row({ head: 'learned', bleu4: 0.2 }),
      row({ head: 'fixed-uniform', bleu4: 0.19 }),
      row({ arch: 'show-attend-tell', head: 'learned', lastGain: 0.9 }),
      row({ arch: 'show-attend-tell', head: 'fixed-uniform' }),
    ];
    const bleu = verdictOf(refuted, /BLEU-4/);
    assert.equal(bleu.verdict, 'did not hold');
    assert.match(
      bleu.sentence,
      /\): show-tell fixed-uniform converged more than 0\.5 behind; show-attend-tell learned gained 0\.90 validation BLEU-4 in its last 5 epochs\.$/,
    );
    assert.equal(verdictOf(refuted, /vocabulary/).verdict, 'not settled', 'a direction claim waits for every run');
    const byRule = [row({ head: 'learned', stopKind: 'plateau', lastGain: 2 }), row({ head: 'fixed-uniform' })];
    assert.equal(verdictOf(byRule, /BLEU-4/).verdict, 'held', 'the stopping rule settles a run whatever its gain');
  });

  test('no learned baseline, no verdicts; results from before the rare-word count, no rare-word verdict', () => {
    assert.deepEqual(captionClaimVerdicts([row({ head: 'fixed-uniform' })]), []);
    const old = [row({ head: 'learned' }), row({ head: 'fixed-uniform' })];
    delete old[0]!.scores.vocab.rare;
    assert.equal(
      captionClaimVerdicts(old).some((v) => /rare/.test(v.claim)),
      false,
    );
  });

  test("the setting sentence says how frost's captioners differ, and results.md lists the sentences", () => {
    const rows = [row({ head: 'learned' }), row({ head: 'fixed-uniform', distinct: 400 })];
    const setting = { data: 'flickr8k', testImages: 1000, preset: 'small', budget: 'at most 10 epochs', beam: 10 };
    const [last] = captionVerdictSentences(rows, { ...setting, pretrainedEncoder: false }).slice(-1);
    assert.match(
      last!,
      /^Where frost's setting differs: flickr8k \(1000 test images\) rather than MSCOCO, the small preset with its CNN encoder trained from scratch/,
    );
    assert.match(last!, /at most 10 epochs per model, one seed, beam 10\.$/);
    const pretrained = captionVerdictSentences(rows, { ...setting, pretrainedEncoder: true }).at(-1)!;
    assert.match(pretrained, /reading a frozen pretrained encoder/);
    const md = formatResults({
      rows,
      examples: [],
      machine: 'Test CPU x2',
      budget: setting.budget,
      data: setting.data,
      beam: 10,
      preset: 'small',
      testImages: 1000,
      command: 'frost experiment caption-heads',
      wallMinutes: 1,
    });
    assert.match(
      md,
      /The paper's claims here:\n\n- Fixed target vectors lose at most 0\.5 test BLEU-4 against learned ones: held/,
    );
    assert.match(md, /\n- Captioners with fixed target vectors use more of the vocabulary .*: held/);
    assert.doesNotMatch(
      formatResults({
        ...{ rows: [rows[0]!], examples: [], machine: 'x', budget: 'b', beam: 1 },
        preset: 's',
        testImages: 1,
        command: 'c',
        wallMinutes: 1,
      }),
      /claims here/,
    );
  });

  test('BLEU-4 from its 95% interval: within, beyond, or both sides of the margin (not settled by this data)', () => {
    const rows = (interval: [number, number] | null, bleu4: number) => [
      row({ head: 'learned', bleu4: 0.2 }),
      row({ head: 'fixed-uniform', bleu4, interval }),
    ];
    const held = verdictOf(rows([-0.4, 0.1], 0.1985), /BLEU-4/);
    assert.equal(held.verdict, 'held');
    assert.match(
      held.sentence,
      /\(BLEU-4 against learned, with its 95% interval: show-tell fixed-uniform -0\.15 \[-0\.40, \+0\.10\]\)\.$/,
    );
    // -0.15 alone would hold it; the interval reaches below -0.5.
    const open = verdictOf(rows([-0.9, 0.5], 0.1985), /BLEU-4/);
    assert.equal(open.verdict, 'not settled');
    assert.match(
      open.sentence,
      /: not settled by this data \(.*\): the 95% interval of show-tell fixed-uniform \[-0\.90, \+0\.50\] reaches both sides of -0\.50\.$/,
    );
    const beyond = verdictOf(rows([-1.6, -0.6], 0.189), /BLEU-4/);
    assert.equal(beyond.verdict, 'did not hold');
    // Without an interval the difference decides, as before, and the sentence says why there is none.
    const none = verdictOf(rows(null, 0.1985), /BLEU-4/);
    assert.equal(none.verdict, 'held');
    assert.match(none.sentence, /show-tell fixed-uniform -0\.15; no interval: hypotheses not stored\)\.$/);
  });

  test("a grid's BLEU-4 intervals: both runs captioned here, or computed before for the same two checkpoints", () => {
    const refs = Array.from({ length: 30 }, (_, i) => [
      `a dog runs on the grass ${i % 4}`,
      `a brown dog is running ${i % 5}`,
      'a dog in a field',
    ]);
    const learnedCaptions = refs.map((r) => r[0]!);
    const fixedCaptions = refs.map((r, i) => (i % 2 === 0 ? r[1]! : 'a cat sits on a mat'));
    const learned = { row: row({ head: 'learned' }), testCaptions: learnedCaptions, checkpoint: 'cd'.repeat(32) };
    const fixed = { row: row({ head: 'fixed-uniform' }), testCaptions: fixedCaptions, checkpoint: 'ab'.repeat(32) };
    const [l, f] = withBleu4Intervals([learned, fixed], refs);
    assert.equal(l!.bleu4Interval, undefined, 'learned rows have none');
    const expected = pairedBootstrap(
      captionBleuStats(fixedCaptions, refs),
      captionBleuStats(learnedCaptions, refs),
      (sums) => 100 * cocoBleuFromStats(sums).bleu[3]!,
    );
    assert.deepEqual(f!.bleu4Interval, {
      ...{ lo: expected.lo, hi: expected.hi, p: expected.p, resamples: 1000, seed: 12345 },
      checkpoints: { run: 'ab'.repeat(32), learned: 'cd'.repeat(32) },
    });
    assert.ok(expected.hi < 0, `fixed-uniform is worse: [${expected.lo}, ${expected.hi}]`);
    // Both rows kept from committed results: the kept interval stands.
    const kept = withBleu4Intervals([{ row: l! }, { row: f! }], refs);
    assert.deepEqual(kept[1]!.bleu4Interval, f!.bleu4Interval);
    // The learned row kept, fixed-uniform captioned again from the same checkpoint: its committed row's interval.
    const earlier = (r: CaptionRow) => [l!, f!].find((x) => x.head === r.head);
    const again = { ...fixed, row: row({ head: 'fixed-uniform' }) };
    assert.deepEqual(withBleu4Intervals([{ row: l! }, again], refs, earlier)[1]!.bleu4Interval, f!.bleu4Interval);
    // ... or from another checkpoint (trained further): none, and none without the committed row.
    const further = { ...again, checkpoint: 'ef'.repeat(32) };
    assert.equal(withBleu4Intervals([{ row: l! }, further], refs, earlier)[1]!.bleu4Interval, null);
    assert.equal(withBleu4Intervals([{ row: l! }, again], refs)[1]!.bleu4Interval, null);
  });
});
