/**
 * One model, two processes: `torchrun --nproc_per_node 2` (gloo, CPU; python/frost_torch/torchrun.py is torchrun
 * for Debian's torch 1.13 on Python 3.11) trains a tiny fairseq-layout Transformer whose output layer is frost's
 * frozen `fixed-l2` head, with DistributedDataParallel, on Multi30k. The ranks hold equal parameters after every
 * step; the checkpoint, converted to safetensors and JSON (frost_torch.convert_checkpoint), holds fairseq's keys
 * and no frozen matrix; the matrix the model trained with is frost's own from the seed, bit for bit; `frost import
 * fairseq` brings it in, `frost export` stores no frozen matrix, and frost's greedy and beam-4 decodes equal a PyTorch
 * reference's token for token.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { decodeModel } from '../core/onnx/proto.ts';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { readSafetensors, type SafetensorsFile } from '../core/safetensors/node-file.ts';
import { initBackend } from '../train/backend/select.ts';
import { multi30kDirOrNull } from './helpers/data-dir.ts';
import { frostInProcess } from './helpers/frost-in-process.ts';
import { frostMatrix } from './helpers/frost-matrix.ts';
import { findTorchPython } from './helpers/torch-python.ts';

const PYTHON_DIR = join(import.meta.dirname, '..', 'python');
const REFERENCE = join(import.meta.dirname, 'helpers', 'fairseq', 'fairseq_reference.py');
const STEPS = 6;
const DIM = 32;
const HEAD_SEED = 5;
const data = multi30kDirOrNull();

let python: string;
let dir: string;
let train: ReturnType<typeof spawnSync>;

function runPython(args: string[]) {
  return spawnSync(python, args, {
    encoding: 'utf8',
    env: { ...process.env, PYTHONPATH: PYTHON_DIR, PYTHONDONTWRITEBYTECODE: '1' },
    timeout: 180_000,
  });
}

describe('DDP training of a frost-headed Transformer with torchrun', { skip: data ? false : 'no Multi30k' }, () => {
  before(async () => {
    python = findTorchPython();
    dir = await mkdtemp(join(tmpdir(), 'frost-ddp-'));
    // --standalone: a local rendezvous; a short monitor interval so the launcher notices its workers' end at once.
    train = runPython(
      ['-m', 'frost_torch.torchrun', '--standalone', '--monitor_interval', '0.2', '--nproc_per_node', '2']
        .concat(['-m', 'frost_torch.train_ddp', '--data', data!, '--src', 'de', '--tgt', 'en', '--lines', '400'])
        .concat(['--steps', String(STEPS), '--batch', '8', '--dim', String(DIM), '--head', 'fixed-l2'])
        .concat(['--head-seed', String(HEAD_SEED), '--out', join(dir, 'run')]),
    );
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('two ranks train, holding equal parameters after every step, and the loss falls', () => {
    assert.equal(train.status, 0, String(train.stderr));
    const steps = readFileSync(join(dir, 'run', 'steps.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { step: number; loss: number; digests: string[] });
    assert.deepEqual(
      steps.map((s) => s.step),
      Array.from({ length: STEPS }, (_, i) => i + 1),
    );
    for (const s of steps) {
      assert.equal(s.digests.length, 2, `step ${s.step}: one digest per rank`);
      assert.equal(s.digests[0], s.digests[1], `step ${s.step}: the ranks' parameters differ`);
    }
    assert.equal(new Set(steps.map((s) => s.digests[0])).size, STEPS, 'every step changed the parameters');
    assert.ok(steps.at(-1)!.loss < steps[0]!.loss, `loss ${steps[0]!.loss} -> ${steps.at(-1)!.loss}`);
  });

  describe('its checkpoint, converted', () => {
    let file: SafetensorsFile;
    let meta: { model: Record<string, unknown>; task: Record<string, unknown> };
    let srcVocab: number;
    let tgtVocab: number;

    before(async () => {
      assert.equal(train.status, 0, String(train.stderr));
      const out = join(dir, 'converted');
      const convert = runPython(['-m', 'frost_torch.convert_checkpoint', join(dir, 'run', 'checkpoint_last.pt'), out]);
      assert.equal(convert.status, 0, convert.stderr);
      file = await readSafetensors(join(out, 'model.safetensors'));
      meta = JSON.parse(readFileSync(join(out, 'fairseq.json'), 'utf8')) as typeof meta;
      // fairseq's dictionaries: four specials, then one word per line.
      const words = (lang: string) =>
        readFileSync(join(dir, 'run', `dict.${lang}.txt`), 'utf8')
          .trim()
          .split('\n');
      srcVocab = 4 + words('de').length;
      tgtVocab = 4 + words('en').length;
    });

    test("holds fairseq's keys and shapes, and the arguments that describe them", () => {
      assert.equal(meta.model.frost_head, 'fixed-l2');
      assert.equal(meta.model.frost_head_seed, HEAD_SEED);
      assert.equal(meta.model.encoder_embed_dim, DIM);
      assert.deepEqual(meta.task, { _name: 'translation', source_lang: 'de', target_lang: 'en' });
      const shape = (k: string) => file.entries.get(k)?.shape;
      assert.deepEqual(shape('encoder.embed_tokens.weight'), [srcVocab, DIM]);
      assert.deepEqual(shape('decoder.embed_tokens.weight'), [tgtVocab, DIM]);
      for (const stack of ['encoder', 'decoder'])
        for (const layer of [0, 1]) {
          assert.deepEqual(shape(`${stack}.layers.${layer}.self_attn.k_proj.weight`), [DIM, DIM]);
          assert.deepEqual(shape(`${stack}.layers.${layer}.fc1.weight`), [2 * DIM, DIM]);
          assert.deepEqual(shape(`${stack}.layers.${layer}.final_layer_norm.bias`), [DIM]);
        }
      assert.deepEqual(shape('decoder.layers.1.encoder_attn.out_proj.weight'), [DIM, DIM]);
    });

    test('stores no frozen matrix: the only |V| x d tensor is the target embedding', () => {
      // fixed-l2 learns nothing of its own: its matrix is rebuilt from the seed, so no output-layer key at all.
      assert.deepEqual(
        [...file.entries.values()].filter((e) => e.shape.join() === `${tgtVocab},${DIM}`).map((e) => e.name),
        ['decoder.embed_tokens.weight'],
      );
      assert.deepEqual(
        [...file.entries.keys()].filter((k) => k.startsWith('decoder.output_projection.') || k.endsWith('targets')),
        [],
      );
      assert.equal(file.entries.size, 86, 'embeddings, 2 + 2 layers, no head');
    });

    test("the matrix the model trained with is frost's, from the seed, bit for bit", async () => {
      const dump = join(dir, 'targets.f32');
      const script = [
        'import json, sys, torch',
        'from frost_torch.transformer import build, load_args',
        'meta = json.load(open(sys.argv[1]))',
        'model = build(load_args(meta["model"]), int(sys.argv[3]), int(sys.argv[4]), 1)',
        'open(sys.argv[2], "wb").write(model.decoder.output_projection.targets.contiguous().numpy().tobytes())',
      ].join('\n');
      const run = runPython(['-c', script, join(dir, 'converted', 'fairseq.json'), dump, `${srcVocab}`, `${tgtVocab}`]);
      assert.equal(run.status, 0, run.stderr);
      await initBackend({ prefer: 'wasm', quiet: true });
      const frost = frostMatrix({ head: 'fixed-l2', seed: HEAD_SEED, vocab: tgtVocab, dim: DIM });
      const theirs = new Uint32Array(Uint8Array.from(readFileSync(dump)).buffer);
      assert.equal(theirs.length, frost.length);
      assert.ok(Buffer.from(theirs.buffer).equals(Buffer.from(frost.buffer, frost.byteOffset, frost.byteLength)));
    });

    test('imports into frost, exports with no frozen matrix stored, and decodes as the PyTorch model does', async () => {
      const converted = join(dir, 'converted');
      const run = join(dir, 'frost-run');
      const imported = await frostInProcess([
        'import',
        'fairseq',
        converted,
        '--out',
        run,
        '--dicts',
        join(dir, 'run'),
      ]);
      assert.equal(imported.code, 0, imported.stderr);
      const model = join(dir, 'model');
      const exported = await frostInProcess(['export', run, '--out', model, '--quiet']);
      assert.equal(exported.code, 0, exported.stderr);
      // The decoder's only |V| x d initializer is the target input embedding: the frozen matrix is regenerated.
      const graph = (
        decodeModel(readFileSync(join(model, 'decoder.onnx'))) as {
          graph: { initializer: { name: string; dims?: number[]; data_type?: number }[] };
        }
      ).graph;
      const large = graph.initializer.filter(
        (t) => t.data_type === 1 && (t.dims ?? []).map(Number).reduce((n, d) => n * d, 1) >= tgtVocab * DIM,
      );
      assert.deepEqual(
        large.map((t) => t.name),
        ['decoder/embedding'],
      );
      // The PyTorch reference (test/helpers/fairseq, written from fairseq's equations) on 20 test sentences.
      for (const lang of ['de', 'en'])
        cpSync(join(dir, 'run', `dict.${lang}.txt`), join(converted, `dict.${lang}.txt`));
      const sentences = gunzipSync(readFileSync(join(data!, 'test_2016_flickr.de.gz')))
        .toString('utf8')
        .split('\n')
        .slice(0, 20);
      writeFileSync(join(dir, 'sentences.de'), sentences.join('\n') + '\n');
      const runtime = await loadModelDir(model, { intraOpNumThreads: 1 });
      try {
        for (const beam of [1, 4]) {
          const reference = runPython([REFERENCE, converted, join(dir, 'sentences.de'), '--beam', String(beam)]);
          assert.equal(reference.status, 0, reference.stderr);
          const want = reference.stdout
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l) as { tokens: string[]; log_prob: number });
          const done = await runtime.translate(sentences, { beam, allowUnk: true });
          done.forEach((t, i) => {
            assert.deepEqual(t.tokens, want[i]!.tokens, `beam ${beam}, sentence ${i}`);
            assert.ok(Math.abs(t.logProb - want[i]!.log_prob) < 1e-3 * Math.max(1, Math.abs(want[i]!.log_prob)));
          });
        }
      } finally {
        await runtime.release();
      }
    });
  });
});
