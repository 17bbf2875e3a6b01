/**
 * What bench:decode hands a peer that decodes frost's own weights (bench/peer/ctranslate2_decode.py), and how it
 * judges the peer's tokens, without the peer: the parameters written beside a bench model are the ones its exported
 * graphs run (by frost's names, the shapes the peer's mapping reads, the joint vocabulary's one embedding), moved
 * off their constant initial values so the token check covers every bias and layer norm; and the check's
 * comparison (greedy exact, beam as the set of hypotheses).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test, before, after } from 'node:test';
import { decodeModel, type ModelProtoObject } from '../core/onnx/proto.ts';
import { hypothesisMismatches } from '../bench/decode-check.ts';
import { PARAMS_DIR, writeBenchModel, type BenchModel } from '../bench/decode-model.ts';
import { loadCheckpoint } from '../train/checkpoint.ts';

describe('bench:decode: the weights a peer reads', () => {
  let root: string;
  let model: BenchModel;
  let tensors: Awaited<ReturnType<typeof loadCheckpoint>>['tensors'];

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'frost-decode-peer-'));
    model = await writeBenchModel(root, {
      arch: 'transformer',
      preset: 'tiny',
      head: 'learned',
      joint: true,
      srcVocab: 40,
      params: true,
      noise: 0.05,
    });
    ({ tensors } = await loadCheckpoint(join(model.dir, PARAMS_DIR)));
  });
  after(() => rm(root, { recursive: true, force: true }));

  test('one joint vocabulary: one embedding, the same tokens on both sides of the card', () => {
    assert.deepEqual(model.card.source!.tokens, model.card.target.tokens);
    assert.equal(model.card.target.tokens.length, 40);
    assert.ok(tensors.has('decoder/embedding'));
    assert.ok(!tensors.has('encoder/embedding'), 'a joint model has no separate source embedding');
  });

  test('the names and shapes the peer maps (x W + b, W [in, out]; the head W [d, |V|])', () => {
    const { model: d, ff } = model.archConfig as { model: number; ff: number };
    const shape = (name: string) => tensors.get(name)?.shape;
    assert.deepEqual(shape('decoder/embedding'), [40, d]);
    assert.deepEqual(shape('encoder/layer0/self/Wq'), [d, d]);
    assert.deepEqual(shape('decoder/layer1/cross/bv'), [d]);
    assert.deepEqual(shape('decoder/layer0/ff/W1'), [d, ff]);
    assert.deepEqual(shape('decoder/layer0/ff/W2'), [ff, d]);
    assert.deepEqual(shape('decoder/layer0/ln3/gamma'), [d]);
    assert.deepEqual(shape('encoder/norm/beta'), [d], 'the tiny preset is pre-norm: each stack ends with a norm');
    assert.deepEqual(shape('head/W'), [d, 40]);
    assert.deepEqual(shape('head/b'), [40]);
  });

  test('biases and layer norms are moved off their constant initial values', () => {
    const varied = (name: string) => new Set(tensors.get(name)!.data).size > 1;
    for (const name of ['encoder/layer0/self/bq', 'decoder/layer1/ln2/gamma', 'encoder/norm/beta', 'head/b'])
      assert.ok(varied(name), `${name} is still constant`);
  });

  test('the checkpoint holds the values the exported graphs run', async () => {
    const graph = (
      decodeModel(await readFile(join(model.dir, model.card.graphs.decoder.file))) as unknown as ModelProtoObject
    ).graph;
    const inits = new Map(graph.initializer.map((t) => [t.name!, t]));
    let compared = 0;
    for (const [name, { shape, data }] of tensors) {
      const init = inits.get(name);
      if (!init?.raw_data) continue;
      assert.deepEqual(init.dims, shape, name);
      const raw = init.raw_data;
      assert.deepEqual(new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength)), data, name);
      compared++;
    }
    assert.ok(compared >= 20, `only ${compared} of the checkpoint's tensors found among the decoder's initializers`);
  });
});

describe('bench:decode: comparing a peer’s hypotheses with frost’s', () => {
  test('greedy: the same tokens, or the source named', () => {
    assert.deepEqual(hypothesisMismatches([[[5, 6]], [[7, 8]]], [[[5, 6]], [[7, 8]]], 1, 'ct2'), []);
    const bad = hypothesisMismatches([[[5, 6]], [[7, 8]]], [[[5, 6]], [[7, 9]]], 1, 'ct2');
    assert.equal(bad.length, 1);
    assert.match(bad[0]!, /source 1, greedy: frost \[7 8\], ct2 \[7 9\]/);
  });

  test('beam: the same set of hypotheses in any order; one missing is a mismatch', () => {
    const frost = [
      [
        [1, 2],
        [1, 3],
        [4, 2],
      ],
    ];
    assert.deepEqual(
      hypothesisMismatches(
        frost,
        [
          [
            [1, 3],
            [4, 2],
            [1, 2],
          ],
        ],
        3,
        'ct2',
      ),
      [],
    );
    assert.equal(
      hypothesisMismatches(
        frost,
        [
          [
            [1, 3],
            [4, 2],
            [1, 4],
          ],
        ],
        3,
        'ct2',
      ).length,
      1,
    );
    assert.equal(
      hypothesisMismatches(
        frost,
        [
          [
            [1, 3],
            [4, 2],
          ],
        ],
        3,
        'ct2',
      ).length,
      1,
    );
  });

  test('a different number of sources is a mismatch', () => {
    assert.equal(hypothesisMismatches([[[1]]], [], 1, 'ct2').length, 1);
  });
});
