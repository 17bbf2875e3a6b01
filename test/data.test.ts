import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it, type TestContext } from 'node:test';
import { Command } from 'commander';
import { registerData } from '../clients/cli/commands/data.ts';
import { SeededRandom } from '../core/random.ts';
import { tokenize } from '../core/text/tokenize.ts';
import { Vocabulary } from '../core/vocab.ts';
import { type EncodedPair, filterByLength, makeBatch, paddingStats, planBatches } from '../train/data/batches.ts';
import { detectCorpusKind, loadParallelCorpus } from '../train/data/corpus.ts';
import { fetchMulti30k, MULTI30K_BASE_URL } from '../train/data/fetch.ts';
import { multi30kFiles, readMulti30k } from '../train/data/multi30k.ts';
import { LOCAL_MULTI30K_DIR, multi30kDir, resolveDataRoot, SHARED_DATA_DIR } from '../train/data/paths.ts';
import { makeToyCorpus, TOY_MAX_WORDS, TOY_MIN_WORDS, ToyLanguage } from '../train/data/toy-corpus.ts';

const temps: string[] = [];
async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'frost-data-'));
  temps.push(dir);
  return dir;
}
after(async () => {
  for (const dir of temps) await rm(dir, { recursive: true, force: true });
});

/** The real Multi30k directory, or null (the tests that need it skip, saying why). */
function realMulti30k(): string | null {
  try {
    return multi30kDir();
  } catch {
    return null;
  }
}
const MULTI30K = realMulti30k();
const NO_DATA = 'Multi30k not found: set FROST_DATA or run `frost data multi30k --out data/multi30k`';

function needData(t: TestContext): boolean {
  if (MULTI30K) return true;
  t.skip(NO_DATA);
  return false;
}

/** Runs `frost data ...` through a fresh program, capturing what it prints. */
async function runData(t: TestContext, args: string[]): Promise<string> {
  // Settings made before registerData are inherited by its subcommands: throw instead of exiting, and keep
  // commander's own error lines out of the test output.
  const program = new Command('frost').exitOverride().configureOutput({ writeErr: () => {} });
  registerData(program);
  let printed = '';
  t.mock.method(process.stdout, 'write', (chunk: string | Uint8Array) => {
    printed += String(chunk);
    return true;
  });
  try {
    await program.parseAsync(['node', 'frost', 'data', ...args]);
  } finally {
    t.mock.restoreAll();
  }
  return printed;
}

describe('data paths', () => {
  it('takes FROST_DATA first, else ../shared/data when it exists', () => {
    assert.equal(resolveDataRoot({ FROST_DATA: '/somewhere/data' }), '/somewhere/data');
    assert.equal(resolveDataRoot({}), existsSync(SHARED_DATA_DIR) ? SHARED_DATA_DIR : null);
  });

  it('says what to do when Multi30k is not there', async (t) => {
    if (existsSync(LOCAL_MULTI30K_DIR)) return t.skip(`${LOCAL_MULTI30K_DIR} exists, so the lookup cannot fail`);
    const empty = await tempDir();
    assert.throws(
      () => multi30kDir({ FROST_DATA: empty }),
      (err: Error) => {
        assert.match(err.message, /set FROST_DATA=/i);
        assert.match(err.message, /run `frost data multi30k --out data\/multi30k`/);
        assert.ok(err.message.includes(join(empty, 'multi30k')), 'names the place it looked');
        return true;
      },
    );
  });
});

describe('Multi30k reader', () => {
  it('reads the real splits with exact line counts and known first lines', async (t) => {
    if (!needData(t)) return;
    const dir = MULTI30K!;
    const train = await readMulti30k({ dir, split: 'train', src: 'en', tgt: 'de' });
    assert.equal(train.length, 29000);
    assert.deepEqual(train[0], {
      src: 'Two young, White males are outside near many bushes.',
      tgt: 'Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche.',
    });
    assert.equal((await readMulti30k({ dir, split: 'val', src: 'en', tgt: 'fr' })).length, 1014);
    const test = await readMulti30k({ dir, split: 'test2016', src: 'en', tgt: 'cs' });
    assert.equal(test.length, 1000);
    assert.equal(test[0].src, 'A man in an orange hat starring at something.');
    assert.ok(train.every((p) => p.src.length > 0 && p.tgt.length > 0 && !p.src.includes('\n')));
  });

  it('loads the corpus through loadParallelCorpus, detecting the layout', async (t) => {
    if (!needData(t)) return;
    assert.equal(detectCorpusKind(MULTI30K!), 'multi30k');
    const corpus = await loadParallelCorpus({ dataDir: MULTI30K!, src: 'de', tgt: 'en' });
    assert.deepEqual([corpus.train.length, corpus.val.length, corpus.test.length], [29000, 1014, 1000]);
    assert.equal(corpus.val[0].tgt, 'A group of men are loading cotton onto a truck');
  });

  it('names the path of a missing or corrupt file', async () => {
    const dir = await tempDir();
    await assert.rejects(
      readMulti30k({ dir, split: 'val', src: 'en', tgt: 'de' }),
      (err: Error) => err.message.includes(join(dir, 'val.en.gz')) && /not found/.test(err.message),
    );
    await writeFile(join(dir, 'val.en.gz'), 'this is not gzip');
    await writeFile(join(dir, 'val.de.gz'), 'nor is this');
    await assert.rejects(readMulti30k({ dir, split: 'val', src: 'en', tgt: 'de' }), (err: Error) =>
      err.message.startsWith(`${join(dir, 'val.en.gz')}: not a valid gzip file`),
    );
  });
});

describe('corpus loader', () => {
  it('refuses a directory of neither layout, and misaligned plain files', async () => {
    const dir = await tempDir();
    assert.throws(() => detectCorpusKind(dir), /not a corpus directory/);
    await writeFile(join(dir, 'train.src'), 'a b\nc d\n');
    await writeFile(join(dir, 'train.tgt'), 'x y\n');
    assert.equal(detectCorpusKind(dir), 'plain');
    await assert.rejects(loadParallelCorpus({ dataDir: dir }), /train is misaligned: .*train\.src has 2 lines/);
    await writeFile(join(dir, 'train.tgt'), 'x y\nz\n');
    await assert.rejects(
      loadParallelCorpus({ dataDir: dir }),
      (err: Error) => err.message === `${join(dir, 'val.src')}: file not found`,
    );
  });
});

describe('toy corpus', () => {
  const sizes = { train: 3000, val: 200, test: 200 };
  const corpus = makeToyCorpus({ seed: 7, ...sizes });

  it('is deterministic for a seed and different for another', () => {
    assert.deepEqual(makeToyCorpus({ seed: 7, ...sizes }), corpus);
    const other = makeToyCorpus({ seed: 8, ...sizes });
    assert.notDeepEqual(other.train.slice(0, 20), corpus.train.slice(0, 20));
    // The lexicon itself follows the seed: the two languages share few words.
    const words = (c: typeof corpus) => new Set(c.train.flatMap((p) => p.tgt.split(' ')));
    const a = words(corpus);
    const shared = [...words(other)].filter((w) => a.has(w)).length;
    assert.ok(shared < a.size / 4, `languages of seeds 7 and 8 share ${shared} of ${a.size} target words`);
  });

  it('keeps val and test apart from train and stable when the train size changes', () => {
    const trainSrc = new Set(corpus.train.map((p) => p.src));
    assert.ok(corpus.val.every((p) => !trainSrc.has(p.src)));
    assert.ok(corpus.test.every((p) => !trainSrc.has(p.src)));
    const bigger = makeToyCorpus({ seed: 7, train: 5000, val: 200, test: 200 });
    assert.deepEqual(bigger.test, corpus.test);
    assert.deepEqual(bigger.val, corpus.val);
  });

  it('is lower-case, space-tokenised text of 3-12 words that tokenize() leaves alone', () => {
    const all = [...corpus.train, ...corpus.val, ...corpus.test];
    assert.equal(all.length, 3400);
    for (const { src, tgt } of all) {
      assert.match(src, /^[a-z]+( [a-z]+)*$/);
      assert.match(tgt, /^[a-z]+( [a-z]+)*$/);
      const n = src.split(' ').length;
      assert.ok(n >= TOY_MIN_WORDS && n <= TOY_MAX_WORDS, `${n} words: ${src}`);
      assert.equal(tgt.split(' ').length, n);
    }
    const lengths = new Set(all.map((p) => p.src.split(' ').length));
    assert.ok(lengths.has(3) && lengths.has(12), 'uses the whole length range');
    for (const { src, tgt } of corpus.val) {
      assert.deepEqual(tokenize(src, 'en'), src.split(' '));
      assert.deepEqual(tokenize(tgt, 'de'), tgt.split(' '));
    }
  });

  it('has vocabularies of a few hundred types', () => {
    for (const side of ['src', 'tgt'] as const) {
      const vocab = Vocabulary.build(
        corpus.train.map((p) => p[side].split(' ')),
        { minFreq: 1 },
      );
      assert.ok(vocab.size >= 300 && vocab.size < 1000, `${side} vocabulary has ${vocab.size} entries`);
    }
  });

  it('reorders words and makes them agree, as a function of the source', () => {
    const lang = new ToyLanguage(7);
    const rng = new SeededRandom(7, 'test');
    const translations = new Map<string, Set<string>>();
    let reordered = 0;
    const n = 2000;
    for (let i = 0; i < n; i++) {
      const s = lang.sample(rng);
      assert.deepEqual(
        [...s.align].sort((a, b) => a - b),
        [...s.src.keys()],
        'alignment is a permutation',
      );
      if (s.align.some((p, j) => j > 0 && p < s.align[j - 1])) reordered++;
      s.align.forEach((p, j) => {
        const set = translations.get(s.src[p]) ?? new Set<string>();
        set.add(s.tgt[j]);
        translations.set(s.src[p], set);
      });
      // SOV: the verb, which follows the subject noun phrase in the source, ends the target.
      assert.ok(s.align[s.align.length - 1] > 0);
    }
    assert.ok(reordered / n > 0.8, `only ${reordered} of ${n} sentences are reordered`);
    // Nouns translate one to one; 'the' and adjectives take the gender and number of their noun.
    for (const noun of lang.nouns) {
      const seen = translations.get(noun.src);
      if (seen) assert.deepEqual([...seen], [noun.tgt]);
    }
    assert.equal(translations.get('the')?.size, 4);
    const adjForms = lang.adjectives.map((a) => translations.get(a.src)?.size ?? 0);
    assert.ok(adjForms.filter((k) => k >= 3).length > lang.adjectives.length / 2, 'adjectives agree with their noun');
  });
});

describe('batches', () => {
  const toy = makeToyCorpus({ seed: 3, train: 2000, val: 0, test: 0 });
  const srcVocab = Vocabulary.build(
    toy.train.map((p) => tokenize(p.src, 'en')),
    { minFreq: 1 },
  );
  const tgtVocab = Vocabulary.build(
    toy.train.map((p) => tokenize(p.tgt, 'de')),
    { minFreq: 1 },
  );
  const pairs: EncodedPair[] = toy.train.map((p) => ({
    src: srcVocab.encode(tokenize(p.src, 'en')),
    tgt: tgtVocab.encode(tokenize(p.tgt, 'de')),
  }));
  // Cover a wider length range than the toy corpus does, as real data would.
  const rng = new SeededRandom(11, 'lengths');
  const ids = (n: number) => Int32Array.from({ length: n }, () => 4 + rng.int(50));
  for (let i = 0; i < 500; i++) {
    const n = 1 + rng.int(40);
    pairs.push({ src: ids(n), tgt: ids(Math.max(1, n - 3 + rng.int(7))) });
  }

  it('filters by length and drops empty sides', () => {
    const some: EncodedPair[] = [
      { src: [5, 6], tgt: [7] },
      { src: [], tgt: [7] },
      { src: [5], tgt: [] },
      { src: [5, 6, 7, 8], tgt: [7] },
      { src: [5], tgt: [7, 8, 9] },
    ];
    const { kept, dropped } = filterByLength(some, { maxSrcLen: 3, maxTgtLen: 2 });
    assert.deepEqual(kept, [some[0]]);
    assert.equal(dropped, 4);
  });

  it('puts every sentence in exactly one batch per epoch and respects the limits', () => {
    const limits: { maxSentences?: number; maxTokens?: number; chunkSize?: number }[] = [
      { maxSentences: 32 },
      { maxTokens: 400 },
      { maxSentences: 16, maxTokens: 300, chunkSize: 100 },
    ];
    for (const options of limits) {
      for (const epoch of [0, 1]) {
        const plan = planBatches(pairs, { seed: 1, ...options }, epoch);
        const seen = plan.flatMap((b) => [...b]).sort((a, b) => a - b);
        assert.deepEqual(seen, [...pairs.keys()]);
        for (const b of plan) {
          if (options.maxSentences !== undefined) assert.ok(b.length <= options.maxSentences);
          if (options.maxTokens !== undefined && b.length > 1) {
            const width = Math.max(...[...b].map((i) => Math.max(pairs[i].src.length, pairs[i].tgt.length + 1)));
            assert.ok(b.length * width <= options.maxTokens);
          }
        }
      }
    }
  });

  it('pads each batch to its own longest sentence with shifted targets', () => {
    const plan = planBatches(pairs, { seed: 2, maxSentences: 24 }, 0);
    for (const indices of plan.slice(0, 20)) {
      const b = makeBatch(pairs, indices);
      assert.equal(b.B, indices.length);
      assert.deepEqual([...b.indices], [...indices]);
      assert.equal(b.S, Math.max(...[...indices].map((i) => pairs[i].src.length)));
      assert.equal(b.T, Math.max(...[...indices].map((i) => pairs[i].tgt.length)) + 1);
      assert.equal(b.src.length, b.B * b.S);
      assert.equal(b.tgtIn.length, b.B * b.T);
      let tokens = 0;
      for (let r = 0; r < b.B; r++) {
        const src = Array.from(pairs[indices[r]].src);
        const tgt = Array.from(pairs[indices[r]].tgt);
        assert.equal(b.srcLen[r], src.length);
        assert.deepEqual([...b.src.subarray(r * b.S, (r + 1) * b.S)], [...src, ...Array(b.S - src.length).fill(0)]);
        const pad = Array(b.T - tgt.length - 1).fill(0);
        assert.deepEqual([...b.tgtIn.subarray(r * b.T, (r + 1) * b.T)], [2, ...tgt, ...pad]);
        assert.deepEqual([...b.tgtOut.subarray(r * b.T, (r + 1) * b.T)], [...tgt, 3, ...pad]);
        assert.deepEqual([...b.tgtMask.subarray(r * b.T, (r + 1) * b.T)], [...Array(tgt.length + 1).fill(1), ...pad]);
        tokens += tgt.length + 1;
      }
      assert.equal(b.tokens, tokens);
    }
  });

  it('pads much less with bucketing than with random batches', () => {
    const bucketed = paddingStats(pairs, planBatches(pairs, { seed: 1, maxSentences: 32 }, 0));
    const random = paddingStats(pairs, planBatches(pairs, { seed: 1, maxSentences: 32, bucket: false }, 0));
    assert.equal(bucketed.sentences, pairs.length);
    assert.ok(bucketed.waste < 0.15, `bucketed waste ${bucketed.waste.toFixed(3)}`);
    assert.ok(
      bucketed.waste < random.waste / 3,
      `waste ${bucketed.waste.toFixed(3)} vs random ${random.waste.toFixed(3)}`,
    );
  });

  it('is deterministic for a seed and epoch, and shuffles between epochs', () => {
    const options = { seed: 5, maxTokens: 500 };
    assert.deepEqual(planBatches(pairs, options, 3), planBatches(pairs, options, 3));
    assert.notDeepEqual(planBatches(pairs, options, 3), planBatches(pairs, options, 4));
    assert.notDeepEqual(planBatches(pairs, options, 3), planBatches(pairs, { ...options, seed: 6 }, 3));
    assert.throws(() => planBatches(pairs, { seed: 1 }, 0), /maxSentences or maxTokens/);
  });
});

describe('frost data (CLI)', () => {
  it('`frost data toy` writes the plain layout that loadParallelCorpus reads back', async (t) => {
    const out = join(await tempDir(), 'toy');
    const printed = await runData(t, [
      'toy',
      '--out',
      out,
      '--seed',
      '4',
      '--size',
      '300',
      '--val',
      '30',
      '--test',
      '20',
    ]);
    assert.match(printed, /300\/30\/20/);
    assert.deepEqual(readdirSync(out).sort(), [
      'README.md',
      'test.src',
      'test.tgt',
      'train.src',
      'train.tgt',
      'val.src',
      'val.tgt',
    ]);
    assert.equal(readFileSync(join(out, 'train.src'), 'utf8').split('\n').length, 301, '300 lines, newline-terminated');
    assert.match(readFileSync(join(out, 'README.md'), 'utf8'), /seed 4/);
    assert.equal(detectCorpusKind(out), 'plain');
    assert.deepEqual(
      await loadParallelCorpus({ dataDir: out }),
      makeToyCorpus({ seed: 4, train: 300, val: 30, test: 20 }),
    );
  });

  it('`frost data toy` rejects a bad number', async (t) => {
    await assert.rejects(runData(t, ['toy', '--out', await tempDir(), '--size', 'many']), /non-negative integer/);
  });

  it('`frost data multi30k` copies and verifies the local files', async (t) => {
    if (!needData(t)) return;
    const out = join(await tempDir(), 'multi30k');
    const printed = await runData(t, ['multi30k', '--out', out, '--from', MULTI30K!]);
    assert.match(printed, /copying from/);
    for (const { file } of multi30kFiles()) {
      assert.ok(readFileSync(join(out, file)).equals(readFileSync(join(MULTI30K!, file))), `${file} is a byte copy`);
    }
    assert.equal(readdirSync(out).length, 12);
    const corpus = await loadParallelCorpus({ dataDir: out, src: 'en', tgt: 'fr' });
    assert.deepEqual([corpus.train.length, corpus.val.length, corpus.test.length], [29000, 1014, 1000]);
    // A second run keeps the verified files instead of copying them again.
    assert.match(await runData(t, ['multi30k', '--out', out]), /already there/);
  });

  it('downloads through fetch, verifying line counts (fetch faked from the local copy)', async (t) => {
    if (!needData(t)) return;
    const urls: string[] = [];
    const fromLocal =
      (truncate: string | null): typeof fetch =>
      async (input) => {
        const url = String(input);
        urls.push(url);
        const file = url.slice(MULTI30K_BASE_URL.length);
        const bytes = file === truncate ? Buffer.from([0x1f, 0x8b]) : readFileSync(join(MULTI30K!, file));
        return new Response(bytes, { status: 200 });
      };
    const out = await tempDir();
    const result = await fetchMulti30k({ out, download: true, fetchImpl: fromLocal(null) });
    assert.equal(result.method, 'download');
    assert.equal(urls.length, 12);
    assert.ok(urls.includes(`${MULTI30K_BASE_URL}test_2016_flickr.cs.gz`));

    const bad = await tempDir();
    await assert.rejects(fetchMulti30k({ out: bad, download: true, fetchImpl: fromLocal('val.de.gz') }), (err: Error) =>
      err.message.includes(`${MULTI30K_BASE_URL}val.de.gz`),
    );
    assert.ok(!existsSync(join(bad, 'val.de.gz')), 'a file that fails verification is not written');
    const notFound: typeof fetch = async () => new Response('404: Not Found', { status: 404, statusText: 'Not Found' });
    await assert.rejects(fetchMulti30k({ out: bad, download: true, fetchImpl: notFound }), /HTTP 404/);
  });
});
