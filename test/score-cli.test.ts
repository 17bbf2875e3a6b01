/**
 * `frost score` and `frost bleu -t zh` as a user runs them, on inputs from the committed reference vectors so
 * the expected numbers are sacreBLEU's and coco-caption's own. The commands run in this process as the CLI
 * registers them (helpers/frost-in-process.ts); bin/frost.js runs in a child where the process is what is
 * checked: `frost bleu` reading a real pipe, and a refusal's exit status and stderr.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { frostInProcess } from './helpers/frost-in-process.ts';
import { withStdin } from './helpers/piped-stdin.ts';

const BIN = fileURLToPath(new URL('../bin/frost.js', import.meta.url));
const fixture = (path: string) =>
  JSON.parse(readFileSync(fileURLToPath(new URL(`./fixtures/${path}`, import.meta.url)), 'utf8')) as unknown;

interface Entry {
  options: Record<string, unknown>;
  corpus: number;
  format: string;
  signature: string;
}
const sacrebleu = fixture('sacrebleu/sacrebleu-2.6.0.json') as {
  latin: { hyps: string[]; refs: string[][]; bleu: Entry[]; chrf: Entry[] };
  chinese: { hyps: string[]; refs: string[][]; bleu: Entry[] };
};
const coco = fixture('coco-caption/coco-caption.json') as {
  synthetic: {
    hypotheses: string[];
    references: string[][];
    scores: { bleu: number[]; rougeL: number; ciderD: number };
  };
};

const dir = mkdtempSync(join(tmpdir(), 'frost-score-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function write(name: string, content: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

interface Exit {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** bin/frost.js in a child process, `input` piped into it. */
function frostChild(args: string[], input?: string): Exit {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', input, timeout: 60_000 });
}

/** The command in this process, `input` as its stdin. */
async function frost(args: string[], input?: string): Promise<Exit> {
  const run = () => frostInProcess(args);
  const { code, stdout, stderr } = await (input === undefined ? run() : withStdin(input, run));
  return { status: code, stdout, stderr };
}

/** The sacreBLEU entry with the default options (no lower-casing, exp smoothing, chrF β 2, no eps). */
const defaults = (entries: Entry[], extra: Record<string, unknown>) =>
  entries.find((e) => Object.entries(extra).every(([k, v]) => e.options[k] === v))!;

test('frost score on text: BLEU, chrF and chrF++ lines with signatures, as sacreBLEU prints them', async () => {
  const { hyps, refs, bleu, chrf } = sacrebleu.latin;
  // sacreBLEU's inputs may hold U+2028 and U+0085, which are not line breaks for it (it splits on \n only)
  const hyp = write('hyp.txt', `${hyps.join('\n')}\n`);
  const ref1 = write('ref1.txt', `${refs[0]!.join('\n')}\n`);
  const ref2 = write('ref2.txt.gz', gzipSync(`${refs[1]!.join('\n')}\n`));
  const run = await frost(['score', hyp, ref1, ref2]);
  assert.equal(run.status, 0, run.stderr);
  const lines = run.stdout.trimEnd().split('\n');
  const b = defaults(bleu, { tokenize: '13a', smooth_method: 'exp', lowercase: false });
  assert.equal(lines[0], b.format.replace(/^BLEU = /, `BLEU|${b.signature} = `));
  const c = defaults(chrf, { word_order: 0, beta: 2, lowercase: false, whitespace: false, eps_smoothing: false });
  const cpp = defaults(chrf, { word_order: 2, beta: 2, lowercase: false, whitespace: false, eps_smoothing: false });
  assert.equal(lines[1], c.format.replace(/^chrF2 = /, `chrF2|${c.signature} = `));
  assert.equal(lines[2], cpp.format.replace(/^chrF2\+\+ = /, `chrF2++|${cpp.signature} = `));

  const json = await frost(['score', '--json', '-', ref1, ref2], `${hyps.join('\n')}\n`);
  assert.equal(json.status, 0, json.stderr);
  const parsed = JSON.parse(json.stdout) as {
    bleu: { score: number };
    chrf: { score: number };
    chrfpp: { score: number; signature: string };
  };
  assert.ok(Math.abs(parsed.bleu.score - b.corpus) < 1e-9);
  assert.ok(Math.abs(parsed.chrf.score - c.corpus) < 1e-9);
  assert.ok(Math.abs(parsed.chrfpp.score - cpp.corpus) < 1e-9);
  assert.equal(parsed.chrfpp.signature, cpp.signature);

  const sentences = await frost(['score', '--sentence', '--json', hyp, ref1, ref2]);
  assert.equal(sentences.status, 0, sentences.stderr);
  const rows = sentences.stdout
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as { chrf: number; chrfpp: number });
  assert.equal(rows.length, hyps.length);
  const sentenceC = c as Entry & { sentence: number[] };
  const sentenceCpp = cpp as Entry & { sentence: number[] };
  rows.forEach((row, i) => {
    assert.ok(Math.abs(row.chrf - sentenceC.sentence[i]!) < 1e-9, `line ${i}: ${row.chrf} vs ${sentenceC.sentence[i]}`);
    assert.ok(Math.abs(row.chrfpp - sentenceCpp.sentence[i]!) < 1e-9, `line ${i}`);
  });
});

test('frost bleu -t zh equals sacrebleu -tok zh on Chinese text', () => {
  const { hyps, refs, bleu } = sacrebleu.chinese;
  const ref1 = write('zh1.txt', `${refs[0]!.join('\n')}\n`);
  const ref2 = write('zh2.txt', `${refs[1]!.join('\n')}\n`);
  const run = frostChild(['bleu', '-t', 'zh', '--json', ref1, ref2], `${hyps.join('\n')}\n`);
  assert.equal(run.status, 0, run.stderr);
  const expected = defaults(bleu, { tokenize: 'zh', smooth_method: 'exp', lowercase: false });
  const got = JSON.parse(run.stdout) as { score: number; signature: string };
  assert.ok(Math.abs(got.score - expected.corpus) < 1e-9, `${got.score} vs ${expected.corpus}`);
  assert.equal(got.signature, expected.signature);
});

test('frost score on captions: Karpathy JSON with text or COCO results hypotheses, and one-caption-per-line files', async () => {
  const { hypotheses, references, scores } = coco.synthetic;
  const karpathy = write(
    'dataset_toy.json',
    JSON.stringify({
      images: [
        ...references.map((rs, i) => ({
          filename: `${i}.jpg`,
          imgid: i,
          split: 'test',
          sentences: rs.map((raw) => ({ raw })),
        })),
        { filename: 'train.jpg', imgid: 999, split: 'train', sentences: [{ raw: 'a dog runs' }] },
      ],
    }),
  );
  const expectJson = async (args: string[]) => {
    const run = await frost(['score', '--json', ...args]);
    assert.equal(run.status, 0, run.stderr);
    const got = JSON.parse(run.stdout) as {
      bleu4: number;
      rougeL: number;
      ciderD: number;
      count: number;
      vocab: { rare?: unknown };
    };
    assert.equal(got.count, hypotheses.length);
    assert.ok(Math.abs(got.bleu4 - scores.bleu[3]!) < 1e-6);
    assert.ok(Math.abs(got.rougeL - scores.rougeL) < 1e-6);
    assert.ok(Math.abs(got.ciderD - scores.ciderD) < 1e-6);
    return got;
  };
  const fromText = await expectJson([write('caps.txt', `${hypotheses.join('\n')}\n`), karpathy]);
  assert.ok(fromText.vocab.rare, 'a Karpathy file has training captions, so the rare-word share is reported');
  const results = hypotheses.map((caption, i) => ({ image_id: i, caption })).reverse();
  await expectJson([write('results.json', JSON.stringify(results)), karpathy]);

  // every image here has at least 3 references: three one-caption-per-line files
  const three = [0, 1, 2].map((k) => write(`capref${k}.txt`, `${references.map((rs) => rs[k]!).join('\n')}\n`));
  const run = await frost(['score', '--task', 'caption', write('caps2.txt', `${hypotheses.join('\n')}\n`), ...three]);
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /^images 80, references 240/);
  assert.match(run.stdout, /CIDEr-D \d\.\d{4}/);
});

test('frost score refuses mismatched or malformed inputs with one line naming the file', async () => {
  const hyp = write('h.txt', 'a\nb\n');
  const ref = write('r.txt', 'a\n');
  const mismatch = frostChild(['score', hyp, ref]);
  assert.equal(mismatch.status, 1);
  assert.match(mismatch.stderr, /h\.txt has 2 lines, but .*r\.txt has 1/);
  const bad = await frost(['score', hyp, write('bad.json', '{"images": 3}')]);
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /bad\.json is neither a Karpathy dataset_\*\.json .* nor COCO caption annotations/);
  const split = await frost([
    'score',
    hyp,
    write('k.json', JSON.stringify({ images: [{ split: 'val', sentences: [{ raw: 'x' }] }] })),
  ]);
  assert.match(split.stderr, /no images in split 'test' \(it has: val\)/);
  const missing = await frost([
    'score',
    write('res.json', '[{"image_id": 1, "caption": "x"}]'),
    write('coco.json', JSON.stringify({ annotations: [{ image_id: 2, caption: 'y' }] })),
  ]);
  assert.match(missing.stderr, /res\.json has no caption for 1 of 1 images \(2\)/);
});
