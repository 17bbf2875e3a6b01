/**
 * An exported rnn-attn model's decoder returns each row's top-k log-probs (card `graphs.decoder.top`):
 * they are the whole rows' top k in core/decode's order, search from them gives the same hypotheses
 * as search over whole rows, and a card without `top` (exported before it existed) decodes as before.
 */
import assert from 'node:assert/strict';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { writeBenchModel, type BenchModel } from '../bench/decode-model.ts';
import { generate } from '../core/decode/generate.ts';
import { decodeModel } from '../core/onnx/proto.ts';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { MODEL_CARD_FILE } from '../core/runtime/model-card.ts';
import type { Precision } from '../export/precision.ts';
import { assertTopIsWholeRowsTopK, tokenSources, topAndWholeRows } from './helpers/top-candidates.ts';

let root: string;
const models = new Map<Precision, BenchModel>();

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-top-candidates-'));
  for (const precision of ['fp32', 'int8-compute'] as const)
    models.set(
      precision,
      await writeBenchModel(join(root, precision), {
        head: 'learned',
        preset: 'tiny',
        precision,
        srcVocab: 90,
        tgtVocab: 70,
      }),
    );
});
after(() => rm(root, { recursive: true, force: true }));

const sources = (n: number) => tokenSources(n, 90);

describe('rnn-attn top-k decoder outputs', () => {
  it("are each whole row's top k, in core/decode's order", async () => {
    const rt = await loadModelDir(models.get('fp32')!.dir, { intraOpNumThreads: 1 });
    try {
      assert.equal(rt.stepModel.topK, 16);
      const src = sources(5);
      await assertTopIsWholeRowsTopK(rt.stepModel, () => rt.encode(src), 3);
    } finally {
      await rt.release();
    }
  });

  for (const precision of ['fp32', 'int8-compute'] as const) {
    it(`${precision}: greedy and beam from candidates give the hypotheses of whole rows`, async () => {
      const rt = await loadModelDir(models.get(precision)!.dir, { intraOpNumThreads: 1 });
      try {
        const src = sources(7);
        for (const opts of [
          { beam: 1, maxLen: 12 },
          { beam: 1, minLen: 6, maxLen: 6 },
          { beam: 4, maxLen: 10, nBest: 2 },
          { beam: 5, minLen: 5, maxLen: 7 },
        ]) {
          const { top, whole, topSteps } = topAndWholeRows(rt.stepModel);
          const a = await generate(top, await rt.encode(src), src.length, opts);
          const b = await generate(whole, await rt.encode(src), src.length, opts);
          assert.deepEqual(a, b, JSON.stringify(opts));
          assert.ok(topSteps() > 0, `${JSON.stringify(opts)}: stepTop was used`);
        }
      } finally {
        await rt.release();
      }
    });
  }

  it('a model exported before the top-k outputs (no TopK node, no graphs.decoder.top) decodes from whole rows, with the same results', async () => {
    const old = await writeBenchModel(join(root, 'old'), {
      head: 'learned',
      preset: 'tiny',
      precision: 'fp32',
      srcVocab: 90,
      tgtVocab: 70,
      topK: false,
    });
    assert.equal(old.card.graphs.decoder.top, undefined);
    const graph = decodeModel(await readFile(join(old.dir, old.card.graphs.decoder.file))) as {
      graph: { node: { opType?: string; op_type?: string }[] };
    };
    assert.ok(!graph.graph.node.some((n) => (n.op_type ?? n.opType) === 'TopK'), 'the old graph has no TopK node');
    const dir = old.dir;
    const [oldRt, rt] = [
      await loadModelDir(dir, { intraOpNumThreads: 1 }),
      await loadModelDir(models.get('fp32')!.dir, { intraOpNumThreads: 1 }),
    ];
    try {
      assert.equal(oldRt.stepModel.stepTop, undefined);
      const src = sources(6);
      for (const beam of [1, 3]) {
        const a = await generate(oldRt.stepModel, await oldRt.encode(src), src.length, { beam, maxLen: 9 });
        const b = await generate(rt.stepModel, await rt.encode(src), src.length, { beam, maxLen: 9 });
        assert.deepEqual(a, b, `beam ${beam}`);
      }
      const texts = ['s1 s2 s3', 's40 s7', 's5 s6 s7 s8 s9'];
      assert.deepEqual(await oldRt.translate(texts, { beam: 2 }), await rt.translate(texts, { beam: 2 }));
    } finally {
      await oldRt.release();
      await rt.release();
    }
  });

  it('a card naming top-k outputs the decoder lacks is refused at load, naming the graph', async () => {
    const dir = join(root, 'bad-top');
    await cp(models.get('fp32')!.dir, dir, { recursive: true });
    const card = JSON.parse(await readFile(join(dir, MODEL_CARD_FILE), 'utf8')) as {
      graphs: { decoder: { top: { tokens: string } } };
    };
    card.graphs.decoder.top.tokens = 'no_such_output';
    await writeFile(join(dir, MODEL_CARD_FILE), JSON.stringify(card));
    await assert.rejects(loadModelDir(dir, { intraOpNumThreads: 1 }), (err: Error) => {
      assert.match(err.message, /decoder\.onnx.*no output 'no_such_output'/);
      return true;
    });
  });
});
