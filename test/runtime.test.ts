import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ort } from '../core/runtime/ort-node.ts';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { importOrtWebInNode } from '../core/runtime/ort-web.ts';
import { parseModelCard } from '../core/runtime/model-card.ts';
import { Seq2SeqRuntime, type Translation } from '../core/runtime/seq2seq.ts';
import { buildTinyModel, writeTinyModelDir } from './helpers/tiny-model.ts';

const TEXTS = ['A man runs.', 'The red dog sits on a big house and the small cat sits.', 'a cat and a zebra'];

let root: string;
let modelDir: string;
let runtime: Seq2SeqRuntime;

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-runtime-'));
  modelDir = await writeTinyModelDir(join(root, 'tiny'));
  runtime = await loadModelDir(modelDir, { intraOpNumThreads: 1 });
});

after(async () => {
  await runtime?.release();
  await rm(root, { recursive: true, force: true });
});

/** A copy of the tiny model in its own directory, for tests that damage it. */
async function copyModel(name: string): Promise<string> {
  return writeTinyModelDir(join(root, name));
}

/** Same tokens; scores equal up to float noise (batched kernels may sum in another order). */
function assertSameTranslation(actual: Translation, expected: Translation, what: string): void {
  assert.equal(actual.text, expected.text, `${what}: text`);
  assert.deepEqual(actual.tokens, expected.tokens, `${what}: tokens`);
  assert.ok(Math.abs(actual.score - expected.score) < 1e-4, `${what}: score ${actual.score} vs ${expected.score}`);
  assert.ok(
    Math.abs(actual.logProb - expected.logProb) < 1e-4,
    `${what}: logProb ${actual.logProb} vs ${expected.logProb}`,
  );
}

describe('loadModelDir refuses broken model directories, naming the file', () => {
  test('model-card.json that is not JSON', async () => {
    const dir = await copyModel('bad-json');
    const path = join(dir, 'model-card.json');
    await writeFile(path, '{"format": "frost-model", ');
    await assert.rejects(loadModelDir(dir), (err: Error) => {
      assert.ok(err.message.includes(path), err.message);
      assert.match(err.message, /invalid JSON/);
      return true;
    });
  });

  test('model-card.json that is JSON but not a card', async () => {
    const dir = await copyModel('bad-card');
    const path = join(dir, 'model-card.json');
    const card = JSON.parse(await readFile(path, 'utf8'));
    delete card.graphs.decoder.logProbs;
    await writeFile(path, JSON.stringify(card));
    await assert.rejects(loadModelDir(dir), (err: Error) => {
      assert.ok(err.message.includes(path), err.message);
      assert.match(err.message, /graphs\.decoder\.logProbs/);
      return true;
    });
  });

  test('missing model-card.json', async () => {
    const dir = join(root, 'empty');
    await assert.rejects(loadModelDir(dir), (err: Error) => err.message.includes(join(dir, 'model-card.json')));
  });

  test('truncated .onnx file (size differs from the card)', async () => {
    const dir = await copyModel('truncated');
    const path = join(dir, 'decoder.onnx');
    const bytes = await readFile(path);
    await writeFile(path, bytes.subarray(0, Math.floor(bytes.length / 2)));
    await assert.rejects(loadModelDir(dir), (err: Error) => {
      assert.ok(err.message.includes(path), err.message);
      assert.match(err.message, /truncated/);
      return true;
    });
  });

  test('truncated .onnx file that ONNX Runtime has to reject (card updated to match)', async () => {
    const dir = await copyModel('truncated-ort');
    const path = join(dir, 'encoder.onnx');
    const bytes = await readFile(path);
    const cut = bytes.subarray(0, Math.floor(bytes.length * 0.6));
    await writeFile(path, cut);
    const cardPath = join(dir, 'model-card.json');
    const card = JSON.parse(await readFile(cardPath, 'utf8'));
    card.files['encoder.onnx'].bytes = cut.length;
    await writeFile(cardPath, JSON.stringify(card));
    await assert.rejects(loadModelDir(dir), (err: Error) => {
      assert.ok(err.message.includes(path), err.message);
      assert.match(err.message, /not a loadable ONNX encoder graph/);
      return true;
    });
  });

  test('missing .onnx file', async () => {
    const dir = await copyModel('missing-graph');
    const path = join(dir, 'decoder.onnx');
    await rm(path);
    await assert.rejects(
      loadModelDir(dir),
      (err: Error) => err.message.includes(path) && /not found/.test(err.message),
    );
  });

  test('a card whose graphs section does not match the graphs', async () => {
    const model = buildTinyModel();
    const card = parseModelCard(
      JSON.stringify({
        ...model.card,
        graphs: { ...model.card.graphs, decoder: { ...model.card.graphs.decoder, memory: ['enc_out'] } },
      }),
      'mem',
    );
    await assert.rejects(
      Seq2SeqRuntime.create({ ort, card, graphs: { encoder: model.encoder, decoder: model.decoder } }),
      /decoder\.onnx: decoder input 'src_mask' is not named in the model card/,
    );
  });

  test('a card whose append caches (graphs.decoder.cache) do not match the graphs', async () => {
    const model = buildTinyModel();
    const withCache = (states: Record<string, string>) =>
      parseModelCard(
        JSON.stringify({
          ...model.card,
          graphs: {
            ...model.card.graphs,
            decoder: { ...model.card.graphs.decoder, cache: { kind: 'append', length: 'cache_len', axis: 2, states } },
          },
        }),
        'cache',
      );
    const create = (card: ReturnType<typeof withCache>) =>
      Seq2SeqRuntime.create({ ort, card, graphs: { encoder: model.encoder, decoder: model.decoder } });
    const [state] = model.card.graphs.decoder.state;
    await assert.rejects(
      create(withCache({ nope: 'new_nope' })),
      /graphs\.decoder\.cache names 'nope', which is not a state/,
    );
    // This graph has the Concat form: no length input to feed.
    await assert.rejects(create(withCache({ [state!]: `new_${state}` })), /decoder has no input 'cache_len'/);
  });

  test('a graph file outside the model directory', async () => {
    const dir = await copyModel('escape');
    const cardPath = join(dir, 'model-card.json');
    const card = JSON.parse(await readFile(cardPath, 'utf8'));
    card.graphs.encoder.file = '../tiny/encoder.onnx';
    await writeFile(cardPath, JSON.stringify(card));
    await assert.rejects(loadModelDir(dir), /must name a file inside the model directory/);
  });
});

describe('Seq2SeqRuntime', () => {
  test('unknown words map to <unk>', () => {
    assert.deepEqual([...runtime.toSourceIds('A zebra runs.')], [4, 1, 8, 19]);
  });

  test('translates to real target words', async () => {
    const [t] = await runtime.translate(['The red dog sits on a big house and the small cat sits.']);
    assert.ok(t.tokens.length > 0, 'non-empty output');
    const vocab = new Set(runtime.card.target.tokens);
    for (const tok of t.tokens) assert.ok(vocab.has(tok), tok);
    assert.ok(t.logProb < 0 && Number.isFinite(t.score));
    assert.equal(t.nBest, undefined);
  });

  test('decoding is deterministic, across calls and across loads', async () => {
    const a = await runtime.translate(TEXTS, { beam: 4, nBest: 2 });
    const b = await runtime.translate(TEXTS, { beam: 4, nBest: 2 });
    assert.deepEqual(b, a);
    const other = await loadModelDir(modelDir, { intraOpNumThreads: 1 });
    try {
      assert.deepEqual(await other.translate(TEXTS, { beam: 4, nBest: 2 }), a);
    } finally {
      await other.release();
    }
  });

  for (const opts of [{ beam: 1 }, { beam: 4, nBest: 3 }]) {
    test(`a batch of 3 texts equals 3 single calls (beam ${opts.beam})`, async () => {
      const batched = await runtime.translate(TEXTS, opts);
      assert.equal(batched.length, 3);
      for (let i = 0; i < TEXTS.length; i++) {
        const [single] = await runtime.translate([TEXTS[i]], opts);
        assertSameTranslation(batched[i], single, `text ${i}`);
        assert.equal(batched[i].nBest?.length, single.nBest?.length);
        single.nBest?.forEach((h, k) =>
          assertSameTranslation({ ...batched[i].nBest![k] }, { ...h }, `text ${i} n-best ${k}`),
        );
      }
    });
  }

  test('concurrent translate calls give the same results as sequential ones', async () => {
    const sequential = [];
    for (const t of TEXTS) sequential.push((await runtime.translate([t], { beam: 3 }))[0]);
    const concurrent = await Promise.all(TEXTS.map(async (t) => (await runtime.translate([t], { beam: 3 }))[0]));
    assert.deepEqual(concurrent, sequential);
  });

  test('beam search returns n-best lists sorted by score', async () => {
    const [t] = await runtime.translate([TEXTS[1]], { beam: 4, nBest: 4 });
    assert.ok(t.nBest && t.nBest.length >= 2, 'several hypotheses');
    assert.equal(t.nBest[0].text, t.text);
    for (let k = 1; k < t.nBest.length; k++) assert.ok(t.nBest[k - 1].score >= t.nBest[k].score);
  });

  test('an empty batch gives an empty result; bad options are refused by name', async () => {
    assert.deepEqual(await runtime.translate([]), []);
    await assert.rejects(runtime.translate(['a dog'], { beam: 2, nBest: 3 }), /nBest/);
  });
});

describe('isomorphism', () => {
  test('onnxruntime-web (wasm) with a graph loader translates like onnxruntime-node', async () => {
    const ortWeb = await importOrtWebInNode();
    ortWeb.env.wasm.numThreads = 1;
    const model = buildTinyModel();
    const card = parseModelCard(JSON.stringify(model.card), 'tiny/model-card.json');
    const requested: string[] = [];
    const web = await Seq2SeqRuntime.create({
      ort: ortWeb,
      card,
      graphs: async (file) => {
        requested.push(file);
        return file === card.graphs.encoder.file ? model.encoder : model.decoder;
      },
    });
    try {
      assert.deepEqual(requested, ['encoder.onnx', 'decoder.onnx']);
      const opts = { beam: 4, nBest: 2 };
      const [onWeb, onNode] = [await web.translate(TEXTS, opts), await runtime.translate(TEXTS, opts)];
      onWeb.forEach((t, i) => assertSameTranslation(t, onNode[i], `text ${i}`));
    } finally {
      await web.release();
    }
  });

  test('a failing graph loader is reported with the located file', async () => {
    const model = buildTinyModel();
    const card = parseModelCard(JSON.stringify(model.card), 'mem');
    await assert.rejects(
      Seq2SeqRuntime.create({
        ort,
        card,
        graphs: async () => {
          throw new Error('HTTP 404');
        },
        locate: (file) => `https://models.example/tiny/${file}`,
      }),
      /^Error: https:\/\/models\.example\/tiny\/encoder\.onnx: cannot read the encoder graph \(HTTP 404\)$/,
    );
  });
});

describe('devices', () => {
  test("'cuda' runs on CUDA or says what is missing; 'auto' falls back with a note", async () => {
    let cuda: Seq2SeqRuntime | undefined;
    try {
      cuda = await loadModelDir(modelDir, { device: 'cuda' });
    } catch (err) {
      assert.match((err as Error).message, /--device cuda: CUDA is not available: .+ It needs .*providers_cuda/);
    }
    if (cuda) {
      const [onCuda] = await cuda.translate([TEXTS[0]]);
      const [onCpu] = await runtime.translate([TEXTS[0]]);
      assert.equal(onCuda.text, onCpu.text);
      await cuda.release();
      return;
    }
    const notes: string[] = [];
    const auto = await loadModelDir(modelDir, { device: 'auto', log: (m) => notes.push(m) });
    try {
      assert.equal(notes.length, 1);
      assert.match(notes[0], /--device auto: CUDA is not available .*running on the CPU/);
      assert.deepEqual(await auto.translate(TEXTS), await runtime.translate(TEXTS));
    } finally {
      await auto.release();
    }
  });
});
