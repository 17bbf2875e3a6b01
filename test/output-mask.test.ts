/**
 * Targets the output layer never predicts: a joint subword vocabulary holds pieces only the source language uses
 * (and unused byte pieces). Their logits are pinned out of the softmax, so they take no probability and no
 * gradient, and a model with thousands of them learns as fast as one without.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { newRunConfig, type NewRunFlags } from '../clients/cli/commands/train-config.ts';
import { exportRun } from '../export/export-run.ts';
import { SPECIALS } from '../core/vocab.ts';
import { buildHead, getHeadDefinition, headNames } from '../models/heads/index.ts';
import { sharedEmbeddingRows } from '../models/heads/target-matrix.ts';
import { EXCLUDED_LOGIT } from '../models/heads/output-mask.ts';
import { GraphBuilder } from '../core/onnx/graph-builder.ts';
import { decodeModel } from '../core/onnx/proto.ts';
import { tensorValue } from '../models/onnx-values.ts';
import { runOrt } from './helpers/onnx-check.ts';
import { ParamStore } from '../models/params.ts';
import { initBackend } from '../train/backend/select.ts';
import { makeToyCorpus } from '../train/data/toy-corpus.ts';
import { excludedTargets } from '../train/output-support.ts';
import { runConfigSchema } from '../train/run-config.ts';
import { learnSubwords } from '../train/subwords.ts';
import { cachedConfigRun, cachedToyData } from './helpers/config-runs.ts';
import { toyRunConfig, writeToyData } from './helpers/toy-run.ts';

let dir: string;

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-output-mask-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('a joint vocabulary counts each language on its own; pieces the targets never use are excluded, </s> never', async () => {
  const corpus = makeToyCorpus({ seed: 3, train: 300, val: 1, test: 1, lexiconScale: 0.2 });
  const { vocabs } = await learnSubwords({ kind: 'bpe', size: 600, joint: true, minFreq: 1, maskUnseen: true }, dir, {
    src: corpus.train.map((p) => p.src),
    tgt: corpus.train.map((p) => p.tgt),
  });
  const src = vocabs.src!;
  const tgt = vocabs.tgt!;
  assert.deepEqual(src.toJSON(), tgt.toJSON(), 'one joint model: the same pieces on both sides');
  const sourceOnly = src.frequencies!.filter((c, id) => c > 0 && tgt.frequencies![id] === 0).length;
  assert.ok(sourceOnly > 50, `${sourceOnly} source-only pieces`);

  const config = toyRunConfig(dir, 'fixed-l2', {
    tokenizer: 'sentencepiece',
    vocab: { kind: 'bpe', size: 600, joint: true },
  });
  const excluded = excludedTargets(config, tgt);
  assert.deepEqual(
    excluded,
    tgt.frequencies!.flatMap((c, id) => (c === 0 && id !== SPECIALS.eos.id ? [id] : [])),
  );
  assert.ok(excluded.includes(SPECIALS.unk.id) && !excluded.includes(SPECIALS.eos.id));
  assert.deepEqual(excludedTargets({ ...config, vocab: { ...config.vocab, maskUnseen: false } }, tgt), []);
  assert.deepEqual(excludedTargets({ ...config, labelSmoothing: 0.1 }, tgt), [], 'smoothing spreads ε over every id');
  const seenOnly = { ...config.vocab, compactOutput: true, smoothSeenOnly: true };
  assert.deepEqual(excludedTargets({ ...config, labelSmoothing: 0.1, vocab: seenOnly }, tgt), excluded);
  assert.deepEqual(excludedTargets({ ...config, vocab: { ...config.vocab, kind: 'word', joint: false } }, tgt), []);
});

test('every head gives excluded targets probability 0 and its learnable parameters no gradient through them', () => {
  const V = 40;
  const d = 8;
  const excluded = [0, 1, 2, 7, 20, 39];
  const f = tf.randomUniform([5, d], -1, 1, 'float32', 4) as tf.Tensor2D;
  const targets = tf.tensor1d([3, 4, 5, 6, 8], 'int32');
  for (const name of headNames()) {
    const params = new ParamStore(1);
    const embedding = params.variable('decoder/embedding', [V, d], { kind: 'uniform', limit: 0.1 });
    const ctx = { vocabSize: V, inputDim: d, embedding, params, seed: 1, dropout: 0 };
    const plain = buildHead(name, { ...ctx, params: new ParamStore(1) });
    const head = buildHead(name, { ...ctx, excludedTargets: excluded });
    const probs = tf.tidy(() => tf.softmax(head.logits(f, false)).arraySync()) as number[][];
    for (const row of probs) {
      for (const id of excluded) assert.equal(row[id], 0, `${name}: p(${id}) = ${row[id]}`);
      assert.ok(Math.abs(row.reduce((a, b) => a + b, 0) - 1) < 1e-5, name);
    }
    // the other logits are the plain head's, moved by nothing
    const diff = tf.tidy(() => {
      const keep = tf.tensor1d(
        Array.from({ length: V }, (_, id) => id).filter((id) => !excluded.includes(id)),
        'int32',
      );
      const a = tf.gather(head.logits(f, false), keep, 1);
      const b = tf.gather(plain.logits(f, false), keep, 1);
      return tf.max(tf.abs(tf.sub(a, b))).dataSync()[0]!;
    });
    assert.ok(diff < 1e-5, `${name}: kept logits moved by ${diff}`);
    const logits = tf.tidy(() => head.logits(f, false).arraySync());
    for (const row of logits)
      for (const id of excluded) assert.equal(row[id], EXCLUDED_LOGIT, `${name}: pinned exactly`);
    const learnable = [...params.learnable.entries()].filter(
      ([n]) => n.startsWith('head/') || n === 'decoder/embedding',
    );
    const scoresWithEmbedding = getHeadDefinition(name).targetMatrix === sharedEmbeddingRows;
    if (!learnable.some(([n]) => n.startsWith('head/')) && !scoresWithEmbedding) {
      params.dispose(); // fixed-l2, fixed-uniform, hadamard: nothing learnable in the head
      continue;
    }
    const { grads } = tf.variableGrads(
      () => tf.losses.softmaxCrossEntropy(tf.oneHot(targets, V), head.logits(f, true)) as tf.Scalar,
      learnable.map(([, v]) => v),
    );
    for (const [pname, v] of learnable) {
      const g = grads[v.name];
      if (g === undefined) continue; // a parameter this head's logits do not use
      // rows (embedding [V, e], bias [V]) or columns (W [d, V]) of the excluded ids
      const perId = g.shape[0] === V ? g : g.rank === 2 && g.shape[1] === V ? tf.transpose(g) : null;
      if (!perId) continue;
      const rows = tf.tidy(() => tf.max(tf.abs(tf.reshape(perId, [V, -1])), 1).arraySync() as number[]);
      for (const id of excluded) {
        const mag = rows[id]!;
        assert.equal(mag, 0, `${name}: ${pname} gets gradient ${mag} through excluded id ${id}`);
      }
    }
    tf.dispose(Object.values(grads));
    params.dispose();
  }
});

test('a joint vocabulary whose targets use a fifth of its pieces learns the toy corpus as fast as a small one', async () => {
  // Before excluded targets: 804 of 984 pieces never occur in the toy targets, and a tied model reached 0.8
  // validation BLEU after 3 epochs (77 with them excluded; 86 with a word vocabulary of 224 entries).
  const config = toyRunConfig(await cachedToyData(), 'tied', {
    epochs: 3,
    tokenizer: 'sentencepiece',
    vocab: { kind: 'bpe', size: 2000, joint: true },
  });
  // Trained once per content hash of the code that trains it (cached-fixture.ts).
  const runDir = await cachedConfigRun('joint-vocab-tied', config);
  const tgt = JSON.parse(await readFile(join(runDir, 'vocab.tgt.json'), 'utf8')) as { frequencies: number[] };
  const unused = tgt.frequencies.filter((c) => c === 0).length;
  assert.ok(unused > tgt.frequencies.length / 2, `${unused} of ${tgt.frequencies.length} pieces unused`);
  const lines = (await readFile(join(runDir, 'metrics.jsonl'), 'utf8')).trim().split('\n');
  const last = JSON.parse(lines.at(-1)!) as { valBleu: number };
  assert.ok(last.valBleu >= 40, `val BLEU ${last.valBleu.toFixed(2)} after 3 epochs`);
});

test('frost train excludes unseen pieces by default; --keep-unseen-outputs keeps them, and only for bpe translation', async () => {
  const dataDir = await writeToyData(join(dir, 'toy-flags'), { seed: 1, train: 20, val: 2, test: 2 });
  const flags = (extra: Partial<NewRunFlags>): NewRunFlags => ({
    task: 'translation',
    arch: 'rnn-attn',
    head: 'fixed-l2',
    data: dataDir,
    preset: 'tiny',
    set: {},
    headOption: {},
    seed: 1,
    vocab: 'bpe',
    jointVocab: true,
    ...extra,
  });
  const byDefault = await newRunConfig(flags({}), join(dir, 'never-1'));
  assert.equal(byDefault.vocab.kind === 'bpe' && byDefault.vocab.maskUnseen, true);
  const kept = await newRunConfig(flags({ keepUnseenOutputs: true }), join(dir, 'never-2'));
  assert.equal(kept.vocab.maskUnseen, false);
  await assert.rejects(
    newRunConfig(flags({ keepUnseenOutputs: true, vocab: 'word', jointVocab: false }), join(dir, 'never-3')),
    /--keep-unseen-outputs is for --task translation with --vocab bpe/,
  );
  const seenOnly = await newRunConfig(flags({ smoothSeenOnly: true, labelSmoothing: 0.1 }), join(dir, 'never-4'));
  assert.ok(seenOnly.vocab.kind === 'bpe' && seenOnly.vocab.smoothSeenOnly && seenOnly.vocab.compactOutput);
  assert.equal(seenOnly.labelSmoothing, 0.1);
  for (const extra of [{ vocab: 'word', jointVocab: false }, { keepUnseenOutputs: true }]) {
    await assert.rejects(
      newRunConfig(flags({ smoothSeenOnly: true, ...extra }), join(dir, 'never-5')),
      /--smooth-seen-only is for --task translation with --vocab bpe\|unigram, unseen pieces excluded/,
    );
  }
  assert.throws(
    () => runConfigSchema.parse({ ...seenOnly, vocab: { ...seenOnly.vocab, compactOutput: false } }),
    /smoothSeenOnly needs a compact output layer/,
  );
});

test('--smooth-seen-only: label smoothing over the pieces the targets use trains and exports a compact layer', async () => {
  const config = toyRunConfig(await cachedToyData(), 'fixed-l2', {
    epochs: 3,
    labelSmoothing: 0.1,
    tokenizer: 'sentencepiece',
    vocab: { kind: 'bpe', size: 1000, joint: true, compactOutput: true, smoothSeenOnly: true },
  });
  // Trained once per content hash of the code that trains it (cached-fixture.ts).
  const runDir = await cachedConfigRun('smooth-seen-only', config);
  const tgt = JSON.parse(await readFile(join(runDir, 'vocab.tgt.json'), 'utf8')) as { frequencies: number[] };
  const kept = tgt.frequencies.filter((c, id) => c > 0 || id === SPECIALS.eos.id).length;
  assert.ok(kept < tgt.frequencies.length / 2, `${kept} of ${tgt.frequencies.length} pieces scored`);
  const metrics = (await readFile(join(runDir, 'metrics.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { trainLoss: number; trainNll: number; valBleu: number });
  for (const m of metrics) assert.ok(Number.isFinite(m.trainLoss) && m.trainLoss > m.trainNll, JSON.stringify(m));
  assert.ok(metrics[2]!.trainNll < metrics[0]!.trainNll && metrics[2]!.valBleu >= 30, JSON.stringify(metrics));
  const { card, parity } = await exportRun(runDir, join(dir, 'model-smooth'), { quiet: true });
  assert.ok(parity.maxScaledDiff <= 1e-4);
  assert.deepEqual(card.head.compactOutput, { rows: kept, vocabulary: tgt.frequencies.length });
});

test('the exported graph: kept logits as tfjs computes them, excluded ones pushed below any real logit, no pass over the logits after a biased Gemm', async () => {
  const [V, d, N] = [40, 8, 3];
  const excluded = [0, 1, 2, 7, 20, 39];
  const f = tf.randomUniform([N, d], -1, 1, 'float32', 4) as tf.Tensor2D;
  const fData = f.dataSync() as Float32Array;
  const graphOf = (name: string, excludedTargets: number[]) => {
    const params = new ParamStore(1);
    const embedding = params.variable('decoder/embedding', [V, d], { kind: 'uniform', limit: 0.5 });
    const head = buildHead(name, {
      vocabSize: V,
      inputDim: d,
      embedding,
      params,
      seed: 1,
      dropout: 0,
      excludedTargets,
    });
    const g = new GraphBuilder('head', { opset: 18 });
    const input = g.input('f', 'float32', ['N', d]);
    const shared = head.sharedEmbeddingOnnx?.(g);
    const table = shared?.matrix ?? g.initializer('decoder/embedding', tensorValue(embedding));
    g.output(
      g.scope('head', () => head.toOnnx(g, input, { embedding: table, storeFrozen: false })),
      'logits',
      'float32',
      ['N', V],
    );
    const tfjs = tf.tidy(() => head.logits(f, false).arraySync());
    params.dispose();
    const bytes = g.toBytes();
    return { bytes, tfjs, nodes: (decodeModel(bytes) as { graph: { node: { op_type: string }[] } }).graph.node };
  };
  for (const name of headNames()) {
    const plain = graphOf(name, []);
    const masked = graphOf(name, excluded);
    const added = masked.nodes.map((n) => n.op_type);
    for (const op of plain.nodes.map((n) => n.op_type)) added.splice(added.indexOf(op), added.includes(op) ? 1 : 0);
    // One Add at most, none where the head ends in a Gemm with a bias of its own (the offsets joined it).
    assert.ok(added.length <= 1 && added.every((op) => op === 'Add'), `${name}: ${added.join(',')}`);
    if (name === 'learned' || name === 'tied') assert.deepEqual(added, [], `${name}: offsets folded into the bias`);
    const out = (await runOrt(masked.bytes, { f: { data: fData, dims: [N, d] } })).logits!.data as Float32Array;
    for (let i = 0; i < N; i++)
      for (let id = 0; id < V; id++) {
        const [got, want] = [out[i * V + id]!, masked.tfjs[i]![id]!];
        if (excluded.includes(id)) assert.ok(got < EXCLUDED_LOGIT / 2, `${name}: id ${id} at ${got}`);
        else assert.ok(Math.abs(got - want) < 1e-4, `${name}: id ${id}: ${got} vs tfjs ${want}`);
      }
  }
});
