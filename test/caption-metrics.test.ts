/**
 * Caption metrics against coco-caption.
 *
 * Expected values marked "coco-caption" were produced by running the reference scorers themselves
 * on the inputs below: tylin/coco-caption pycocoevalcap/bleu/bleu_scorer.py (with Bleu.compute_score's
 * option='closest') and pycocoevalcap/rouge/rouge.py, and vrama91/cider
 * pyciderevalcap/ciderD/ciderD_scorer.py with df_mode="corpus", under Python 3.11 + numpy 2.4 with
 * only Python 2 → 3 syntax changes (iteritems → items, xrange → range). The inputs:
 * - the two-image example of the widely copied coco-caption demo (kracwarlock's demo_cocoeval.py
 *   gist, reproduced in helloMickey/caption_eval's README);
 * - the two-image, one-reference example of wangleihitcs/CaptionMetrics (main.py);
 * - eight Flickr8k test images from shared/data, caption 0 scored against captions 1-4, lower-cased
 *   with punctuation deleted (Karpathy's prepro);
 * - edge cases: an empty hypothesis, a hypothesis shorter than every n-gram order, a tie for the
 *   closest reference length, and an n-gram in every image's references (idf 0, zero norm).
 * Published outputs for these inputs were not found as text (the demos print to screenshots or
 * notebooks over COCO val2014, which is not here), so the reference code is the oracle; the
 * hand-computed cases below check the same rules independently.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ciderD } from '../core/metrics/cider-d.ts';
import { cocoBleu } from '../core/metrics/coco-bleu.ts';
import { evaluateCaptions } from '../core/metrics/caption-eval.ts';
import { lcsLength, rougeL, rougeLSentence } from '../core/metrics/rouge-l.ts';
import { vocabUsage } from '../core/metrics/vocab-usage.ts';
import { Vocabulary } from '../core/vocab.ts';

interface Reference {
  hyps: string[];
  refs: string[][];
  bleu: number[];
  testLen: number;
  refLen: number;
  rouge: number;
  rougeEach: number[];
  cider: number;
  ciderEach: number[];
}

const COCO_CAPTION: Record<string, Reference> = {
  'coco-caption demo (kracwarlock)': {
    hyps: ['man is playing guitar', 'a woman is cutting vegetables'],
    refs: [
      ['the man is playing a guitar', 'a man is playing a guitar'],
      ['a woman is slicing cucumbers', 'the woman is slicing cucumbers', 'a woman is cutting cucumbers'],
    ],
    bleu: [0.711766580212326, 0.638042834868279, 0.5804707570883624, 0.47799953528030814],
    testLen: 9,
    refLen: 11,
    rouge: 0.7860759493670886,
    rougeEach: [0.7721518987341772, 0.8],
    cider: 4.016678075227614,
    ciderEach: [4.4222450393441175, 3.611111111111111],
  },
  'CaptionMetrics demo (wangleihitcs)': {
    hyps: ['train traveling down a track in front of a road', 'plane is flying through the sky'],
    refs: [['a train traveling down tracks next to lights'], ['a large jetliner flying over a traffic filled street']],
    bleu: [0.2935665820925154, 0.19848723672039212, 0.14556160648960606, 2.3200603324117605e-5],
    testLen: 16,
    refLen: 17,
    rouge: 0.2344203410035606,
    rougeEach: [0.34014869888475835, 0.12869198312236285],
    cider: 1.112870690034755,
    ciderEach: [1.8853108090695776, 0.34043057099993235],
  },
  'Flickr8k test, leave one caption out': {
    // 1056338697_4f7d7ce270 … 1122944218_8eb3607403, the first eight test images of dataset_flickr8k.json
    hyps: [
      'a blond woman in a blue shirt appears to wait for a ride',
      'a boy in his blue swim shorts at the beach',
      'a lady and a man with no shirt sit on a dock',
      'a closeup of a white dog that is laying its head on its paws',
      'a boy with a toy gun',
      'a black dog jumping to catch a rope toy',
      'a little tan dog with large ears running through the grass',
      'a baby in a white garment holds a flag with crescent moon and star',
    ],
    refs: [
      [
        'a blond woman is on the street hailing a taxi',
        'a woman is signaling is to traffic as seen from behind',
        'a woman with blonde hair wearing a blue tube top is waving on the side of the street',
        'the woman in the blue dress is holding out her arm at oncoming traffic',
      ],
      [
        'a boy smiles for the camera at a beach',
        'a young boy in swimming trunks is walking with his arms outstretched on the beach',
        'children playing on the beach',
        'the boy is playing on the shore of an ocean',
      ],
      [
        'a man and a woman are sitting on a dock together',
        'a man and a woman sitting on a dock',
        'a man and woman sitting on a deck next to a lake',
        'a shirtless man and a woman sitting on a dock',
      ],
      [
        'a large white dog lying on the floor',
        'a white dog has its head on the ground',
        'a white dog is resting its head on a tiled floor with its eyes open',
        'a white dog rests its head on the patio bricks',
      ],
      [
        'a little boy in orange shorts playing with a toy',
        'a young boy with his foot outstretched aims a toy at the camera in front of a fireplace',
        'a young child plays with his new lightup toy',
        'boy with toy gun pointed at the camera',
      ],
      [
        'a black dog playing fetch with a ball of rope',
        'a black dog pounces to get a rope toy',
        'a black dog running after his rope toy',
        'a large black dog is playing in a grassy yard',
      ],
      [
        'a playful dog is running through the grass',
        'a small dogs ears stick up as it runs in the grass',
        'the small dog is running across the lawn',
        'this is a small beige dog running through a grassy field',
      ],
      [
        'a baby is holding a small black flag with a moon and a star on it',
        'a baby wearing a white gown waves a muslim flag',
        'a little toddler dressed in white is smiling while a lady helps him wave a flag',
        'baby in white outfit holding black and white flag',
      ],
    ],
    bleu: [0.6407100683072221, 0.48643421421658045, 0.30099771545617904, 0.14072604762915367],
    testLen: 89,
    refLen: 95,
    rouge: 0.5847404976439939,
    rougeEach: [
      0.3562043795620438, 0.4972826086956521, 0.5865384615384615, 0.6240409207161125, 0.5980392156862745,
      0.7777777777777778, 0.6500888099467139, 0.5879518072289156,
    ],
    cider: 1.3358934549344705,
    ciderEach: [
      0.6339775813750602, 0.8075194944669062, 1.7410177778005882, 1.6063916682031507, 1.1535573918415771,
      2.1851978574659436, 1.3941953260671434, 1.1652905422553952,
    ],
  },
  'edge cases': {
    hyps: ['a dog runs', '', 'the cat sat on the mat', 'two men are here', 'a'],
    refs: [
      ['a dog runs fast on grass', 'the dog is running'],
      ['a cat'],
      ['the cat sat on the mat', 'a cat is sitting on a mat'],
      ['two men talk', 'two men are talking now', 'men'],
      ['a bird', 'a small bird on a branch'],
    ],
    bleu: [0.7494664792550807, 0.7378461401131345, 0.7221718827476128, 0.6910030616160645],
    testLen: 14,
    // 4 + 2 + 6 + 3 + 2: 'two men are here' (4 words) is as close to 3 as to 5, and takes 3.
    refLen: 17,
    rouge: 0.6275079302141158,
    rougeEach: [0.6288659793814433, 0, 1, 0.8798076923076923, 0.6288659793814433],
    cider: 2.1883961681641373,
    ciderEach: [2.5546013813614357, 0, 5.54165523373573, 2.539020770614988, 0.306703455108535],
  },
};

/** Relative agreement to 1e-12: float summation order differs from numpy's, nothing else may. */
function close(actual: number, expected: number, what: string): void {
  assert.ok(Math.abs(actual - expected) <= 1e-12 * Math.max(1, Math.abs(expected)), `${what}: ${actual} ≠ ${expected}`);
}

describe('caption metrics match coco-caption', () => {
  for (const [name, ref] of Object.entries(COCO_CAPTION)) {
    test(name, () => {
      const bleu = cocoBleu(ref.hyps, ref.refs);
      ref.bleu.forEach((b, k) => close(bleu.bleu[k]!, b, `BLEU-${k + 1}`));
      assert.equal(bleu.testLen, ref.testLen);
      assert.equal(bleu.refLen, ref.refLen);
      const rouge = rougeL(ref.hyps, ref.refs);
      close(rouge.score, ref.rouge, 'ROUGE-L');
      ref.rougeEach.forEach((r, i) => close(rouge.scores[i]!, r, `ROUGE-L of image ${i}`));
      const cider = ciderD(ref.hyps, ref.refs);
      close(cider.score, ref.cider, 'CIDEr-D');
      ref.ciderEach.forEach((c, i) => close(cider.scores[i]!, c, `CIDEr-D of image ${i}`));
    });
  }

  test('evaluateCaptions tokenises raw text first: case and punctuation do not change the scores', () => {
    const ref = COCO_CAPTION['coco-caption demo (kracwarlock)']!;
    const shout = (s: string) => `${s[0]!.toUpperCase()}${s.slice(1)} .`;
    const scores = evaluateCaptions(
      ref.hyps.map(shout),
      ref.refs.map((rs) => rs.map(shout)),
    );
    close(scores.bleu1, ref.bleu[0]!, 'BLEU-1');
    close(scores.bleu4, ref.bleu[3]!, 'BLEU-4');
    close(scores.rougeL, ref.rouge, 'ROUGE-L');
    close(scores.ciderD, ref.cider, 'CIDEr-D');
    assert.equal(scores.count, 2);
    assert.deepEqual(scores.vocab, { distinctWords: 8, totalWords: 9 });
  });
});

/** Hand-computed BLEU ignores coco-caption's 1e-9 in each denominator: agreement to 1e-8. */
function near(actual: number, expected: number, what: string): void {
  assert.ok(Math.abs(actual - expected) <= 1e-8, `${what}: ${actual} ≠ ${expected}`);
}

describe('caption metrics, hand-computed', () => {
  test('BLEU clips each n-gram to its count in the reference, per order', () => {
    // the×2, cat×2 against one 'the', one 'cat': 2 of 4 unigrams; 'the cat' once of 3 bigrams; no
    // trigram or 4-gram matches. Equal lengths: no brevity penalty.
    const { bleu, correct, guess } = cocoBleu(['the cat the cat'], [['the cat is here']]);
    assert.deepEqual(correct, [2, 1, 0, 0]);
    assert.deepEqual(guess, [4, 3, 2, 1]);
    near(bleu[0]!, 0.5, 'BLEU-1');
    near(bleu[1]!, Math.sqrt(0.5 / 3), 'BLEU-2');
    assert.ok(bleu[3]! < 1e-6, 'no 4-gram match gives a near-zero BLEU-4, not NaN');
  });

  test('BLEU applies the brevity penalty to the corpus, not per sentence', () => {
    // 2 words against a closest reference of 4: exp(1 - 4/2).
    const { bleu } = cocoBleu(['a dog'], [['a dog runs fast', 'a brown dog is running']]);
    near(bleu[0]!, Math.exp(1 - 2), 'BLEU-1');
  });

  test('ROUGE-L takes the best precision and the best recall, possibly from different references', () => {
    assert.equal(lcsLength(['a', 'b', 'c', 'd'], ['a', 'c', 'e']), 2);
    // P = 1 from the first reference, R = 1/2 from the second; F with β = 1.2.
    const f = (p: number, r: number) => (2.44 * p * r) / (r + 1.44 * p);
    close(rougeLSentence('a b', ['a b c d e f', 'a x']), f(1, 0.5), 'ROUGE-L');
    assert.equal(rougeLSentence('x y', ['a b']), 0);
  });

  test('CIDEr-D of exact copies: 10 with every order present, less when orders are missing', () => {
    // Two images, each n-gram in one image's references: idf = log 2 for all of them.
    close(ciderD(['a b c d', 'e f g h'], [['a b c d'], ['e f g h']]).score, 10, 'four-word copies');
    // Two-word sentences have no 3- or 4-grams: those orders give 0, so (1 + 1 + 0 + 0) / 4 × 10.
    close(ciderD(['x y', 'z w'], [['x y'], ['z w']]).score, 5, 'two-word copies');
    // One image: log N = 0, so every weight is 0.
    assert.equal(ciderD(['x y'], [['x y']]).score, 0);
  });

  test('CIDEr-D penalises length differences with a Gaussian of σ = 6', () => {
    // The hypothesis's n-grams are all in the reference, which has 3 more words: δ = 3.
    const hyp = 'a b c d';
    const ref = 'a b c d e f g';
    const other = 'p q r s t u v';
    const withPenalty = ciderD([hyp, other], [[ref], [other]]).scores[0]!;
    // Cosine per order, computed by hand from tf-idf weights that are all log 2.
    const cos = [4 / Math.sqrt(4 * 7), 3 / Math.sqrt(3 * 6), 2 / Math.sqrt(2 * 5), 1 / Math.sqrt(1 * 4)];
    const expected = (cos.reduce((a, b) => a + b, 0) / 4) * Math.exp(-9 / 72) * 10;
    close(withPenalty, expected, 'CIDEr-D with δ = 3');
  });

  test('misaligned inputs are refused, naming the function', () => {
    assert.throws(() => cocoBleu(['a'], []), /cocoBleu: 1 hypotheses but 0 reference lists/);
    assert.throws(() => ciderD(['a'], [[]]), /ciderD: hypothesis 0 has no references/);
    assert.throws(() => rougeL(['a', 'b'], [['a']]), /rougeL: 2 hypotheses/);
  });
});

describe('vocabulary usage', () => {
  const hyps = ['a dog runs', 'a zebu runs', 'a dog sits'];

  test('distinct words, and rare words by training count (below 100 is rare)', () => {
    const counts = new Map([
      ['a', 5000],
      ['dog', 100],
      ['runs', 99],
      ['sits', 150],
    ]);
    const usage = vocabUsage(hyps, { trainCounts: counts });
    assert.equal(usage.distinctWords, 5);
    assert.equal(usage.totalWords, 9);
    // runs ×2 (99 < 100) and zebu (never seen in training); dog at exactly 100 is not rare.
    assert.deepEqual(usage.rare, { threshold: 100, words: 3, share: 3 / 9, distinct: 2 });
  });

  test('a Vocabulary built with counts works as the training counts', () => {
    const train = Array.from({ length: 120 }, () => ['a', 'dog']).concat(
      Array.from({ length: 10 }, () => ['runs', 'sits']),
    );
    const vocab = Vocabulary.build(train, { minFreq: 1 });
    const usage = vocabUsage(hyps, { trainCounts: vocab, rareThreshold: 100 });
    assert.deepEqual(usage.rare, { threshold: 100, words: 4, share: 4 / 9, distinct: 3 });
  });

  test('no hypotheses: zero words and a zero share, not NaN', () => {
    assert.deepEqual(vocabUsage([], { trainCounts: new Map() }), {
      distinctWords: 0,
      totalWords: 0,
      rare: { threshold: 100, words: 0, share: 0, distinct: 0 },
    });
  });
});
