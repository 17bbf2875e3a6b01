/**
 * What bench:decode hands a peer that decodes frost's own weights (bench/peer/ctranslate2_decode.py), and how it
 * judges the peer's tokens, without the peer: the parameters written beside a bench model are the ones its exported
 * graphs run (by frost's names, the shapes the peer's mapping reads, the joint vocabulary's one embedding), moved
 * off their constant initial values so the token check covers every bias and layer norm; and the check's
 * comparison (greedy exact, beam as the set of hypotheses, or only the best ones for a degenerate random model); and
 * the peers' sinusoidal tables, which must be frost's for both of its layouts (its own and fairseq's).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test, before, after } from 'node:test';
import { decodeModel, type ModelProtoObject } from '../core/onnx/proto.ts';
import { hypothesisMismatches } from '../bench/decode-check.ts';
import { decodePeers, widestCt2Isa } from '../bench/decode-peers.ts';
import { PARAMS_DIR, writeBenchModel, type BenchModel } from '../bench/decode-model.ts';
import * as tf from '@tensorflow/tfjs-core';
import { loadCheckpoint } from '../train/checkpoint.ts';
import { createPositionalEncoding, positionVectors } from '../models/layers/positional-encoding.ts';
import { ParamStore } from '../models/params.ts';
import { REPO_ROOT } from '../train/data/paths.ts';

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

  test("'best': each side's best hypothesis among the other's, the near-tied rest not compared", () => {
    const frost = [
      [
        [1, 1, 1],
        [2, 1, 1],
      ],
    ];
    const swapped = [
      [
        [1, 1, 1],
        [1, 2, 1],
      ],
    ];
    assert.equal(hypothesisMismatches(frost, swapped, 2, 'ct2').length, 1);
    assert.deepEqual(hypothesisMismatches(frost, swapped, 2, 'ct2', 'best'), []);
    // The best ranked second on the other side still counts (the forced </s> reorders the closed beams)...
    assert.deepEqual(
      hypothesisMismatches(
        frost,
        [
          [
            [2, 1, 1],
            [1, 1, 1],
          ],
        ],
        2,
        'ct2',
        'best',
      ),
      [],
    );
    // ...a best the other side never found does not.
    assert.equal(
      hypothesisMismatches(
        frost,
        [
          [
            [3, 1, 1],
            [1, 2, 1],
          ],
        ],
        2,
        'ct2',
        'best',
      ).length,
      1,
    );
    assert.equal(hypothesisMismatches(frost, [[]], 2, 'ct2', 'best').length, 1);
  });

  test('a different number of sources is a mismatch', () => {
    assert.equal(hypothesisMismatches([[[1]]], [], 1, 'ct2').length, 1);
  });
});

describe("bench:decode's peers: sinusoidal positions", () => {
  for (const kind of ['sinusoidal', 'sinusoidal-fairseq'] as const)
    test(`${kind}: the table the peers give CTranslate2 and PyTorch is frost's`, () => {
      const [d, rows] = [16, 12];
      const r = spawnSync(
        '/usr/bin/python3',
        [
          '-c',
          `import json, sys; sys.path.insert(0, 'bench/peer'); sys.dont_write_bytecode = True
from ctranslate2_decode import sinusoids
print(json.dumps(sinusoids(${rows}, ${d}, '${kind}').tolist()))`,
        ],
        { cwd: REPO_ROOT, encoding: 'utf8' },
      );
      assert.equal(r.status, 0, r.stderr);
      const peer = JSON.parse(r.stdout) as number[][];
      const p = new ParamStore(1);
      const frost = tf.tidy(() =>
        positionVectors(createPositionalEncoding(p, 'pos', kind, d, 64), 0, rows).arraySync(),
      );
      assert.equal(peer.length, rows);
      for (let i = 0; i < rows; i++)
        for (let j = 0; j < d; j++)
          assert.ok(
            Math.abs(peer[i]![j]! - frost[i]![j]!) < 1e-5,
            `${kind} row ${i} column ${j}: ${peer[i]![j]} vs ${frost[i]![j]}`,
          );
    });
});

describe("bench:decode's CTranslate2 at its best", () => {
  test('the widest ISA CTranslate2 has code for', () => {
    assert.equal(widestCt2Isa(['avx2', 'fma', 'avx512f', 'avx512bw', 'avx512_vnni']), 'AVX512');
    assert.equal(widestCt2Isa(['avx2', 'fma', 'avx512f']), 'AVX2');
    assert.equal(widestCt2Isa(['avx2', 'fma']), 'AVX2');
    assert.equal(widestCt2Isa(['neon']), 'GENERIC');
  });

  test('best forces that ISA and frees OpenBLAS from the image; default changes neither', () => {
    const ct2 = decodePeers('transformer').find((p) => p.name === 'ct2')!;
    const saved = process.env.CT2_FORCE_CPU_ISA;
    delete process.env.CT2_FORCE_CPU_ISA;
    try {
      const best = ct2.env!({ ct2: 'best' });
      assert.equal(best.set?.CT2_FORCE_CPU_ISA, widestCt2Isa());
      assert.deepEqual([...(best.unset ?? [])], ['OPENBLAS_CORETYPE', 'OPENBLAS_L2_SIZE']);
      const plain = ct2.env!({ ct2: 'default' });
      assert.equal(plain.set?.CT2_FORCE_CPU_ISA, undefined);
      assert.deepEqual([...(plain.unset ?? [])], []);
      // A user's own choice of ISA is kept.
      process.env.CT2_FORCE_CPU_ISA = 'AVX2';
      assert.equal(ct2.env!({ ct2: 'best' }).set?.CT2_FORCE_CPU_ISA, 'AVX2');
    } finally {
      if (saved === undefined) delete process.env.CT2_FORCE_CPU_ISA;
      else process.env.CT2_FORCE_CPU_ISA = saved;
    }
  });
});
