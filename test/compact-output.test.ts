/**
 * The compact output layer: with excluded targets (a joint subword vocabulary's source-only pieces), the head is
 * built on the K kept targets and its [N, K] logits are widened to [N, |V|] with the excluded ids pinned, in tfjs
 * and in the exported graph. Runs whose config.json predates it keep the masked, full-size layer.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { newRunConfig, type NewRunFlags } from '../clients/cli/commands/train-config.ts';
import { GraphBuilder } from '../core/onnx/graph-builder.ts';
import { MODEL_CARD_FILE, parseModelCard } from '../core/runtime/model-card.ts';
import { exportRun } from '../export/export-run.ts';
import { formatInspect, inspectModel } from '../export/inspect.ts';
import { buildModel, resolveArchConfig } from '../models/index.ts';
import { keptTargets } from '../models/heads/compact-output.ts';
import {
  buildHead,
  getHeadDefinition,
  headNames,
  readTargetMatrix,
  resolveHeadOptions,
} from '../models/heads/index.ts';
import { EXCLUDED_LOGIT } from '../models/heads/output-mask.ts';
import { headCrossEntropySum, maskedCrossEntropySum } from '../models/loss.ts';
import type { HeadContext } from '../models/heads/types.ts';
import { tensorValue } from '../models/onnx-values.ts';
import { ParamStore } from '../models/params.ts';
import { analyseMatrix } from '../report/analyse-matrix.ts';
import { inspectTrainedModel } from '../report/collect-model.ts';
import { Vocabulary } from '../core/vocab.ts';
import { initBackend } from '../train/backend/select.ts';
import { makeBatch } from '../train/data/batches.ts';
import { readCheckpointInfo, RunFolder } from '../train/run-folder.ts';
import { resume } from '../train/trainer.ts';
import { copyFixture } from './helpers/cached-fixture.ts';
import { cachedConfigRun, cachedToyData } from './helpers/config-runs.ts';
import { runOrt, runOrtWeb } from './helpers/onnx-check.ts';
import { toyRunConfig } from './helpers/toy-run.ts';

let dir: string;

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-compact-output-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const V = 40;
const d = 8;
const e = 6; // d != e: the heads that score against the embedding learn a projection too
const EXCLUDED = [0, 1, 2, 7, 20, 39];
const N = 5;
/** The corpus of the run from before compactOutput. */
const MASKED_CORPUS = { seed: 1, train: 1000, val: 20, test: 20 };

/** A head context over a fresh store of seed 1, so two contexts built alike hold equal parameters. */
function headContext(): HeadContext {
  const params = new ParamStore(1);
  const embedding = params.variable('decoder/embedding', [V, e], { kind: 'uniform', limit: 0.5 });
  return { vocabSize: V, inputDim: d, embedding, params, seed: 1, dropout: 0 };
}

/** The head's logits [N, |V|] through onnxruntime: f in, the decoder's embedding initializer beside it. */
async function ortLogits(name: string, f: Float32Array, storeFrozen: boolean, web = false): Promise<Float32Array> {
  const ctx = headContext();
  const head = buildHead(name, { ...ctx, excludedTargets: EXCLUDED, compactOutput: true });
  const g = new GraphBuilder('head', { opset: 18 });
  const input = g.input('f', 'float32', ['N', d]);
  const shared = head.sharedEmbeddingOnnx?.(g);
  const embedding = shared?.matrix ?? g.initializer('decoder/embedding', tensorValue(ctx.embedding));
  const logits = g.scope('head', () => head.toOnnx(g, input, { embedding, storeFrozen }));
  g.output(logits, 'logits', 'float32', ['N', V]);
  ctx.params.dispose();
  const out = await (web ? runOrtWeb : runOrt)(g.toBytes(), { f: { data: f, dims: [N, d] } });
  return out.logits!.data as Float32Array;
}

test('every head, compact: the kept logits are the head built on the K kept targets, the excluded exactly pinned, in tfjs and onnxruntime', async () => {
  const kept = keptTargets(V, EXCLUDED);
  const K = kept.length;
  assert.equal(K, V - EXCLUDED.length);
  const f = tf.randomUniform([N, d], -1, 1, 'float32', 4) as tf.Tensor2D;
  const fData = f.dataSync() as Float32Array;
  for (const name of headNames()) {
    const ctx = headContext();
    const head = buildHead(name, { ...ctx, excludedTargets: EXCLUDED, compactOutput: true });
    assert.deepEqual(head.rowIds, kept, name);
    // The same head by its definition on the compact context, in a store of its own with equal parameters.
    const ref = headContext();
    const inner = getHeadDefinition(name).build({ ...ref, vocabSize: K, rowIds: kept }, resolveHeadOptions(name));
    const full = tf.tidy(() => head.logits(f, false).arraySync());
    const expected = tf.tidy(() => inner.logits(f, false).arraySync());
    assert.equal(full[0]!.length, V, `${name}: [N, |V|] logits`);
    assert.equal(expected[0]!.length, K, `${name}: the head itself scores K rows`);
    for (const [i, row] of full.entries()) {
      for (const [k, id] of kept.entries()) assert.equal(row[id], expected[i]![k], `${name}: logit of id ${id}`);
      for (const id of EXCLUDED) assert.equal(row[id], EXCLUDED_LOGIT, `${name}: id ${id} pinned exactly`);
    }
    // The head's own parameters have K rows: none is sized by |V|.
    for (const [pname, t] of [...ctx.params.learnable, ...ctx.params.frozen]) {
      if (pname.startsWith('head/')) assert.ok(!t.shape.includes(V), `${name}: ${pname} [${t.shape}]`);
    }
    // onnxruntime-node, with frozen matrices regenerated and stored, and onnxruntime-web (the browser page's)
    for (const [storeFrozen, web] of [
      [false, false],
      [true, false],
      [false, true],
    ]) {
      const ort = await ortLogits(name, fData, storeFrozen, web);
      for (let i = 0; i < N; i++) {
        for (const id of EXCLUDED) assert.equal(ort[i * V + id], EXCLUDED_LOGIT, `${name}: ort id ${id} pinned`);
        for (const id of kept) {
          const diff = Math.abs(ort[i * V + id]! - full[i]![id]!);
          assert.ok(
            diff < 1e-4,
            `${name} (storeFrozen ${storeFrozen}, web ${web}): ort logit of id ${id} off by ${diff}`,
          );
        }
      }
    }
    ctx.params.dispose();
    ref.params.dispose();
  }
  f.dispose();
});

test('compact heads pass the gradient to their K rows and to the kept rows of the shared embedding, none to the excluded', () => {
  const f = tf.randomUniform([N, d], -1, 1, 'float32', 5) as tf.Tensor2D;
  const targets = tf.tensor1d([3, 4, 5, 6, 8], 'int32');
  const kept = keptTargets(V, EXCLUDED);
  for (const name of ['tied', 'shared-l2', 'shared-distance', 'drill', 'learned']) {
    const ctx = headContext();
    const head = buildHead(name, { ...ctx, excludedTargets: EXCLUDED, compactOutput: true });
    const vars = [...ctx.params.learnable.values()];
    const { grads } = tf.variableGrads(
      () => tf.losses.softmaxCrossEntropy(tf.oneHot(targets, V), head.logits(f, true)) as tf.Scalar,
      vars,
    );
    const embeddingGrad = grads[ctx.embedding.name];
    if (name === 'learned') {
      assert.equal(embeddingGrad, undefined, 'learned does not read the embedding');
      const W = grads[ctx.params.learnable.get('head/W')!.name]!;
      assert.deepEqual(W.shape, [d, kept.length]);
      assert.ok(tf.tidy(() => tf.max(tf.abs(W)).dataSync()[0]!) > 0, 'learned: W learns');
    } else {
      const rows = tf.tidy(() => tf.max(tf.abs(embeddingGrad!), 1).arraySync() as number[]);
      for (const id of EXCLUDED) assert.equal(rows[id], 0, `${name}: embedding row ${id} gets ${rows[id]}`);
      for (const id of kept) assert.ok(rows[id]! > 0, `${name}: kept embedding row ${id} gets no gradient`);
    }
    tf.dispose(Object.values(grads));
    ctx.params.dispose();
  }
  tf.dispose([f, targets]);
});

test('the training loss of a compact head skips the widening: same loss and gradients as over the [N, |V|] logits', () => {
  const f = tf.randomUniform([N, d], -1, 1, 'float32', 6) as tf.Tensor2D;
  const targets = tf.tensor1d([3, 4, 0, 6, 8], 'int32'); // 0: padding, an excluded id with weight 0
  const mask = tf.tensor1d([1, 1, 0, 1, 1], 'float32');
  for (const name of ['tied', 'learned', 'shared-cosine']) {
    const ctx = headContext();
    const head = buildHead(name, { ...ctx, excludedTargets: EXCLUDED, compactOutput: true });
    const vars = [...ctx.params.learnable.values()];
    const compact = tf.variableGrads(() => headCrossEntropySum(head, f, targets, mask, true), vars);
    const wide = tf.variableGrads(() => maskedCrossEntropySum(head.logits(f, true), targets, mask), vars);
    const lossDiff = Math.abs(compact.value.dataSync()[0]! - wide.value.dataSync()[0]!);
    assert.ok(lossDiff < 1e-5, `${name}: loss differs by ${lossDiff}`);
    for (const v of vars) {
      assert.equal(compact.grads[v.name] == null, wide.grads[v.name] == null, `${name}: ${v.name} reached alike`);
      if (compact.grads[v.name] == null) continue; // the embedding, for a head that does not read it
      const diff = tf.tidy(() => tf.max(tf.abs(tf.sub(compact.grads[v.name]!, wide.grads[v.name]!))).dataSync()[0]!);
      assert.ok(diff < 1e-6, `${name}: gradient of ${v.name} differs by ${diff}`);
    }
    tf.dispose([compact.value, wide.value]);
    for (const g of [...Object.values(compact.grads), ...Object.values(wide.grads)]) g?.dispose();
    ctx.params.dispose();
  }
  tf.dispose([f, targets, mask]);
});

test('a joint rnn-attn with a compact tied head: one embedding matrix, which the output layer trains through the gather', () => {
  const config = resolveArchConfig('rnn-attn', 'tiny', { output: 64 }); // d = e: the tied head scores with E itself
  const sizes = { srcVocab: V, tgtVocab: V, jointEmbedding: true, excludedTargets: EXCLUDED, compactOutput: true };
  const model = buildModel('rnn-attn', config, sizes, { name: 'tied' }, 2);
  const embeddings = [...model.params.learnable.keys()].filter((n) => n.endsWith('embedding'));
  assert.deepEqual(embeddings, ['decoder/embedding']);
  assert.deepEqual(model.params.get('head/b').shape, [V - EXCLUDED.length]);
  // Targets use ids 3..6, 8; sources 10..19; ids 30..38 occur on neither side, so only the output layer's
  // gather of E can give their rows a gradient.
  const pairs = [
    { src: [10, 11, 12], tgt: [3, 4, 5] },
    { src: [13, 14, 15, 16, 17, 18, 19], tgt: [6, 8] },
  ];
  const batch = makeBatch(pairs, [0, 1]);
  const E = model.params.get('decoder/embedding') as tf.Variable;
  const { grads } = tf.variableGrads(() => model.lossSum(batch, true), [E]);
  const rows = tf.tidy(() => tf.max(tf.abs(grads[E.name]!), 1).arraySync() as number[]);
  for (let id = 30; id <= 38; id++) assert.ok(rows[id]! > 0, `row ${id}: only the output layer reads it`);
  for (const id of EXCLUDED) if (id > 3) assert.equal(rows[id], 0, `excluded row ${id} is read by nothing`);
  tf.dispose(Object.values(grads));
  model.params.dispose();
});

test('the report reads a compact matrix row by row as its vocabulary ids', () => {
  const ctx = headContext();
  const head = buildHead('fixed-l2', { ...ctx, excludedTargets: EXCLUDED, compactOutput: true });
  const m = readTargetMatrix('fixed-l2', ctx.params, head.rowIds);
  assert.ok(m);
  assert.equal(m.rows, V - EXCLUDED.length);
  assert.deepEqual(m.ids, head.rowIds);
  // A vocabulary whose frequency ranks the ids by the norm of their row: ρ = 1 only if rows map to their ids.
  const tokens = Array.from({ length: V }, (_, i) => (i < 4 ? ['<pad>', '<unk>', '<s>', '</s>'][i]! : `w${i}`));
  const norms = new Map<number, number>();
  for (const [k, id] of m.ids!.entries()) {
    const row = m.data.subarray(k * m.dim, (k + 1) * m.dim);
    norms.set(id, Math.hypot(...row));
  }
  const shuffled = new Float32Array(m.data.length);
  for (const [k, id] of m.ids!.entries()) {
    const scale = (id + 1) / norms.get(id)!;
    for (let i = 0; i < m.dim; i++) shuffled[k * m.dim + i] = m.data[k * m.dim + i]! * scale;
  }
  const vocab = Vocabulary.fromJSON(
    tokens,
    tokens.map((_, id) => id * 10),
  );
  const analysis = analyseMatrix({ ...m, data: shuffled }, vocab, []);
  assert.equal(analysis.words, m.ids!.filter((id) => id >= 4).length, 'words: the kept ones');
  assert.equal(analysis.spearman, 1);
  assert.throws(() => analyseMatrix({ ...m, ids: undefined }, vocab, []), /34 rows, the vocabulary 40 words/);
  ctx.params.dispose();
});

test('frost train --vocab bpe --joint-vocab writes compactOutput; its run trains, exports with parity, and the card counts K rows', async () => {
  const dataDir = await cachedToyData();
  const flags: NewRunFlags = {
    task: 'translation',
    arch: 'rnn-attn',
    head: 'fixed-l2',
    data: dataDir,
    preset: 'tiny',
    set: {},
    headOption: {},
    seed: 1,
    vocab: 'bpe',
    vocabSize: 2000,
    jointVocab: true,
    epochs: 3,
    lr: 5e-3,
  };
  const runDir = join(dir, 'compact');
  const config = await newRunConfig(flags, runDir);
  assert.equal(config.vocab.compactOutput, true);
  const kept = await newRunConfig({ ...flags, keepUnseenOutputs: true }, join(dir, 'never'));
  assert.equal(kept.vocab.compactOutput, undefined, '--keep-unseen-outputs: nothing excluded, nothing compact');
  // The run this config trains, trained once per content hash of the code (cached-fixture.ts); copied, since this
  // test edits its config.json.
  await copyFixture(await cachedConfigRun('compact-output', config), runDir);
  const saved = JSON.parse(await readFile(join(runDir, 'config.json'), 'utf8')) as {
    vocab: { compactOutput: boolean };
  };
  assert.equal(saved.vocab.compactOutput, true);
  const metrics = (await readFile(join(runDir, 'metrics.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { valBleu: number });
  assert.ok(metrics.at(-1)!.valBleu > metrics[0]!.valBleu + 10, `val BLEU ${metrics.map((m) => m.valBleu.toFixed(1))}`);
  assert.ok(metrics.at(-1)!.valBleu >= 40, `val BLEU ${metrics.at(-1)!.valBleu.toFixed(2)} after 3 epochs`);

  const tgt = JSON.parse(await readFile(join(runDir, 'vocab.tgt.json'), 'utf8')) as { frequencies: number[] };
  const Vt = tgt.frequencies.length;
  const K = tgt.frequencies.filter((c, id) => c > 0 || id === 3).length; // </s> is always kept
  assert.ok(K < Vt / 2, `${K} of ${Vt} pieces kept`);
  const out = join(dir, 'compact-export');
  const { card, parity } = await exportRun(runDir, out, { quiet: true });
  assert.ok(parity.maxAbsDiff < 1e-4, `parity ${parity.maxAbsDiff}`);
  assert.deepEqual(card.head.compactOutput, { rows: K, vocabulary: Vt });
  const d = (config.archConfig as { output: number }).output;
  assert.equal(card.params.generated, K * d, 'the regenerated matrix has K rows');
  const inspected = await inspectModel(out);
  assert.deepEqual(inspected.compactOutput, { rows: K, vocabulary: Vt });
  assert.match(formatInspect(inspected), /compact output layer: [\d,]+ of [\d,]+ targets scored/);
  // A masked model of the same run: |V| generated rows, and the same learnable parameters outside the head.
  const masked = buildModel(
    'rnn-attn',
    config.archConfig,
    { srcVocab: Vt, tgtVocab: Vt, jointEmbedding: true, excludedTargets: [0] },
    { name: 'fixed-l2' },
    1,
  );
  assert.equal(masked.head.generatedParams?.(false), Vt * d);
  assert.equal(masked.params.counts().learnable, card.params.learnable);
  masked.params.dispose();
  // The same run told it is masked: a frozen head has no parameter in the checkpoint to misfit, yet it is refused.
  const configText = await readFile(join(runDir, 'config.json'), 'utf8');
  const edited = JSON.parse(configText) as { vocab: Record<string, unknown> };
  edited.vocab.compactOutput = false;
  await writeFile(join(runDir, 'config.json'), JSON.stringify(edited));
  await assert.rejects(
    exportRun(runDir, join(dir, 'never-export-compact'), { quiet: true }),
    new RegExp(`output layer scores ${K} of ${Vt} targets, the run config builds one of ${Vt}`),
  );
  await writeFile(join(runDir, 'config.json'), configText);
  // Reduced precision converts the pinned row too (−10⁴ is exact in float16); the decoded validation BLEU holds.
  const half = await exportRun(runDir, join(dir, 'compact-fp16'), { quiet: true, precision: 'fp16' });
  assert.ok(Math.abs(half.precisionCheck!.bleuDelta!) < 2, `fp16 BLEU Δ ${half.precisionCheck!.bleuDelta}`);
  // frost report's norm-vs-frequency analysis: one point per kept word, read through the row ids.
  const run = await RunFolder.openTask(runDir, 'translation');
  const vocabs = { src: await run.vocab('src'), tgt: await run.vocab('tgt') };
  const info = (await readCheckpointInfo(runDir, 'best'))!;
  const findings = await inspectTrainedModel(run, info, vocabs, card.params.generated);
  const keptWords = tgt.frequencies.filter((c, id) => id >= 4 && c > 0).length;
  assert.equal(findings.matrix?.words, keptWords);
  assert.equal(findings.components.headGenerated, K * d);
  const file = join(out, MODEL_CARD_FILE);
  assert.deepEqual(parseModelCard(await readFile(file, 'utf8'), file).head, card.head, 'the runtime reads the card');
});

test('a run folder from before compactOutput (masked, full-size head) still resumes and exports; a checkpoint of the other layout is refused with its path', async () => {
  // The layout, not the model, matters here: a smaller corpus makes the epoch that resume trains short.
  const dataDir = await cachedToyData(MASKED_CORPUS);
  const runDir = join(dir, 'masked');
  const config = toyRunConfig(dataDir, 'learned', {
    epochs: 1,
    tokenizer: 'sentencepiece',
    vocab: { kind: 'bpe', size: 2000, joint: true },
  });
  assert.equal(config.vocab.compactOutput, undefined);
  await copyFixture(await cachedConfigRun('masked-layout', config), runDir);
  const configText = await readFile(join(runDir, 'config.json'), 'utf8');
  assert.ok(!configText.includes('compactOutput'), 'an old config.json has no compactOutput');
  const Vt = (JSON.parse(await readFile(join(runDir, 'vocab.tgt.json'), 'utf8')) as { tokens: string[] }).tokens.length;
  const again = await resume(runDir, { epochs: 2 }, { quiet: true });
  assert.deepEqual(again.model.params.get('head/W').shape.at(-1), Vt, 'masked: W has |V| columns');
  again.model.params.dispose();
  const { card, parity } = await exportRun(runDir, join(dir, 'masked-export'), { quiet: true });
  assert.ok(parity.maxAbsDiff < 1e-4);
  assert.equal(card.head.compactOutput, undefined);
  assert.equal(card.head.name, 'learned');

  // The same folder told it is compact: its full-size head/W does not fit, and the checkpoint is named.
  const edited = JSON.parse(configText) as { vocab: Record<string, unknown> };
  edited.vocab.compactOutput = true;
  await writeFile(join(runDir, 'config.json'), JSON.stringify(edited));
  const run = await RunFolder.open(runDir);
  await assert.rejects(
    exportRun(runDir, join(dir, 'never-export'), { quiet: true }),
    (err: Error) =>
      err.message.includes(run.findCheckpoint('best')) &&
      new RegExp(`output layer scores ${Vt} of ${Vt} targets, the run config builds one of \\d+`).test(err.message),
  );
  await assert.rejects(resume(runDir, { epochs: 3 }, { quiet: true }), /output layer scores/);
});
