/**
 * A card is checked against its graphs at load (issue #39, item 6): a target vocabulary of another
 * size than the decoder's `log_probs` (with fewer tokens, sampling only ever yielded the first ones),
 * a language model's state size, and encoder inputs and outputs the graph lacks are refused, naming
 * the graph and both numbers.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { decodeModel, encodeModel, type ModelProtoObject, TensorDataType } from '../core/onnx/proto.ts';
import { loadLmModelDir } from '../core/runtime/load-lm-node.ts';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { MODEL_CARD_FILE } from '../core/runtime/model-card.ts';
import { startServer } from '../serve/server.ts';
import { TINY_LM_STEP_FILE, writeTinyLmDir } from './helpers/tiny-lm.ts';
import { assertRefusedToStart } from './helpers/refused-start.ts';
import { TINY_SOURCE_WORDS, writeTinyModelDir } from './helpers/tiny-model.ts';

/** The tiny models' vocabularies: 4 specials and 16 words, so `log_probs` is 20 wide. */
const WIDTH = 20;

let root: string;

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-card-graphs-'));
});

after(async () => {
  await rm(root, { recursive: true, force: true });
});

type Card = {
  source?: { tokens: string[] };
  target: { tokens: string[] };
  graphs: Record<string, Record<string, unknown>>;
};

async function editCard(dir: string, edit: (card: Card) => void): Promise<void> {
  const path = join(dir, MODEL_CARD_FILE);
  const card = JSON.parse(await readFile(path, 'utf8')) as Card;
  edit(card);
  await writeFile(path, JSON.stringify(card, null, 2));
}

/** The card's target vocabulary cut to `size` tokens, or grown to it with made-up words. */
function resize(tokens: string[], size: number): string[] {
  if (size <= tokens.length) return tokens.slice(0, size);
  return [...tokens, ...Array.from({ length: size - tokens.length }, (_, i) => `extra${i}`)];
}

describe('the target vocabulary against the width of log_probs', () => {
  for (const size of [10, 31]) {
    test(`translation model: a card with ${size} target tokens for a ${WIDTH}-wide decoder is refused`, async () => {
      const dir = await writeTinyModelDir(join(root, `mt-${size}`, 'tiny'));
      await editCard(dir, (card) => (card.target.tokens = resize(card.target.tokens, size)));
      await assert.rejects(loadModelDir(dir, { intraOpNumThreads: 1 }), (err: Error) => {
        assert.equal(
          err.message,
          `${join(dir, 'decoder.onnx')}: 'log_probs' is ${WIDTH} wide in the graph, ` +
            `but the model card's target vocabulary (target.tokens) has ${size} tokens`,
        );
        return true;
      });
    });

    test(`language model: a card with ${size} tokens for a ${WIDTH}-wide step graph is refused`, async () => {
      const dir = await writeTinyLmDir(join(root, `lm-${size}`, 'lm'));
      await editCard(dir, (card) => (card.target.tokens = resize(card.target.tokens, size)));
      await assert.rejects(loadLmModelDir(dir, { intraOpNumThreads: 1 }), (err: Error) => {
        assert.equal(
          err.message,
          `${join(dir, TINY_LM_STEP_FILE)}: 'log_probs' is ${WIDTH} wide in the graph, ` +
            `but the model card's target vocabulary (target.tokens) has ${size} tokens`,
        );
        return true;
      });
    });
  }

  test('frost serve refuses to start with such a model, naming both numbers', async () => {
    const models = join(root, 'serve');
    const dir = await writeTinyModelDir(join(models, 'tiny'));
    await editCard(dir, (card) => (card.target.tokens = resize(card.target.tokens, 10)));
    await assertRefusedToStart(
      startServer({ modelsDir: models, port: 0, intraOpNumThreads: 1, workers: 1, log: () => undefined }),
      new RegExp(`decoder\\.onnx: 'log_probs' is ${WIDTH} wide in the graph, .* has 10 tokens`),
    );
  });

  test('the unchanged cards load', async () => {
    await (await loadModelDir(await writeTinyModelDir(join(root, 'good', 'tiny')), { intraOpNumThreads: 1 })).release();
    await (await loadLmModelDir(await writeTinyLmDir(join(root, 'good', 'lm')), { intraOpNumThreads: 1 })).release();
  });
});

describe("the source vocabulary against the encoder's embedding (issue #51, item 1)", () => {
  const rows = 4 + TINY_SOURCE_WORDS.length;
  // More tokens: an added word's id is past the table (500 mid-request, and its batch-mates with it); fewer: every
  // id still in range, so words silently read other words' rows.
  for (const size of [rows + 5, rows - 3]) {
    test(`a card with ${size} source tokens for a ${rows}-row embedding is refused, naming both numbers`, async () => {
      const dir = await writeTinyModelDir(join(root, `src-${size}`, 'tiny'));
      await editCard(dir, (card) => (card.source!.tokens = resize(card.source!.tokens, size)));
      await assert.rejects(loadModelDir(dir, { intraOpNumThreads: 1 }), (err: Error) => {
        assert.equal(
          err.message,
          `${join(dir, 'encoder.onnx')}: the source embedding 'encoder/embedding' has ${rows} rows in the graph, ` +
            `but the model card's source vocabulary (source.tokens) has ${size} tokens`,
        );
        return true;
      });
    });
  }

  test('frost serve refuses to start with such a model', async () => {
    const models = join(root, 'serve-src');
    const dir = await writeTinyModelDir(join(models, 'tiny'));
    await editCard(dir, (card) => (card.source!.tokens = resize(card.source!.tokens, rows + 5000)));
    await assertRefusedToStart(
      startServer({ modelsDir: models, port: 0, intraOpNumThreads: 1, workers: 1, log: () => undefined }),
      new RegExp(`encoder\\.onnx: the source embedding .* has ${rows} rows in the graph, .* has ${rows + 5000} tokens`),
    );
  });
});

describe("the card's graphs section against the graphs", () => {
  test("language model: a state size other than the state input's is refused", async () => {
    const dir = await writeTinyLmDir(join(root, 'lm-state', 'lm'));
    await editCard(dir, (card) => (card.graphs.step!.stateSize = 16));
    await assert.rejects(loadLmModelDir(dir, { intraOpNumThreads: 1 }), (err: Error) => {
      assert.equal(
        err.message,
        `${join(dir, TINY_LM_STEP_FILE)}: 'state' is 8 wide in the graph, but the model card's graphs.step.stateSize is 16`,
      );
      return true;
    });
  });

  test('translation model: encoder inputs or outputs the card lists and the graph lacks are refused', async () => {
    const dir = await writeTinyModelDir(join(root, 'mt-names', 'tiny'));
    await editCard(dir, (card) => (card.graphs.encoder!.inputs = ['src_ids', 'src_lengths', 'src_lang']));
    await assert.rejects(
      loadModelDir(dir, { intraOpNumThreads: 1 }),
      (err: Error) =>
        err.message === `${join(dir, 'encoder.onnx')}: encoder has no input 'src_lang' (inputs: src_ids, src_lengths)`,
    );
    await editCard(dir, (card) => {
      card.graphs.encoder!.inputs = ['src_ids', 'src_lengths'];
      card.graphs.encoder!.outputs = ['state', 'enc_out', 'src_mask', 'attention'];
    });
    await assert.rejects(loadModelDir(dir, { intraOpNumThreads: 1 }), /encoder has no output 'attention'/);
  });
});

describe('ready means warmed up (issue #51): each decode thread decodes once before the server is ready', () => {
  test('a model that loads but cannot decode is refused at start-up, naming its folder', async () => {
    const models = join(root, 'undecodable');
    const dir = await writeTinyModelDir(join(models, 'tiny'));
    // log_probs through a reshape to rows of 7: loadable (the batch is symbolic), but one row of 20 cannot run.
    const path = join(dir, 'decoder.onnx');
    const model = decodeModel(await readFile(path)) as unknown as {
      graph: {
        node: Array<{ input: string[]; output: string[]; op_type: string }>;
        initializer: Array<Record<string, unknown>>;
      };
    };
    const last = model.graph.node.find((n) => n.output.includes('log_probs'))!;
    last.output = last.output.map((o) => (o === 'log_probs' ? 'log_probs_raw' : o));
    const shape = (name: string, dims: number[]) => ({
      name,
      data_type: TensorDataType.INT64,
      dims: [dims.length],
      raw_data: new Uint8Array(BigInt64Array.from(dims.map(BigInt)).buffer),
    });
    model.graph.initializer.push(shape('rows_of_7', [-1, 7]), shape('rows_of_20', [-1, WIDTH]));
    model.graph.node.push(
      { op_type: 'Reshape', input: ['log_probs_raw', 'rows_of_7'], output: ['log_probs_7'] },
      { op_type: 'Reshape', input: ['log_probs_7', 'rows_of_20'], output: ['log_probs'] },
    );
    const bytes = encodeModel(model as unknown as ModelProtoObject);
    await writeFile(path, bytes);
    await editCard(
      dir,
      (card) =>
        ((card as unknown as { files: Record<string, { bytes: number }> }).files['decoder.onnx']!.bytes = bytes.length),
    );
    await assertRefusedToStart(
      startServer({ modelsDir: models, port: 0, intraOpNumThreads: 1, workers: 1, log: () => undefined }),
      /tiny: loaded, but its first decode failed: .*Reshape/,
    );
  });
});
