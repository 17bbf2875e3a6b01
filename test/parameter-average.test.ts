/**
 * `--ema-decay`: an exponential moving average of the weights (train/optim/parameter-average.ts).
 *  - the average after each update, warm-up included, against the formula in float64;
 *  - the training loop validates with the average and trains on from the raw weights; both are saved, and a
 *    resumed run continues the same average;
 *  - a toy run's export decodes with the average (parity passes, the card says so); the flag's refusals.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { newRunConfig } from '../clients/cli/commands/train-config.ts';
import { exportRun } from '../export/export-run.ts';
import { ParamStore } from '../models/params.ts';
import { initBackend } from '../train/backend/select.ts';
import { loadCheckpoint } from '../train/checkpoint.ts';
import { inferenceTensors, ParameterAverage } from '../train/optim/parameter-average.ts';
import { TrainingProgress } from '../train/progress.ts';
import { RunFolder } from '../train/run-folder.ts';
import { createSchedule } from '../train/schedules/index.ts';
import { train } from '../train/trainer.ts';
import {
  createOptimizer,
  loadLastCheckpoint,
  newLoopState,
  runEpochs,
  type LoopConfig,
} from '../train/training-loop.ts';
import { toyRunConfig, toyRunFlags, writeToyData } from './helpers/toy-run.ts';

let dir: string;

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-ema-'));
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The average after updates 1..n of a parameter whose value after update t is values[t - 1], from `start`. */
function expectedAverage(start: number, values: number[], decay: number): number {
  let shadow = start;
  values.forEach((p, i) => {
    const d = Math.min(decay, (2 + i) / (11 + i));
    shadow = d * shadow + (1 - d) * p;
  });
  return shadow;
}

const close = (actual: number, expected: number, what: string) =>
  assert.ok(Math.abs(actual - expected) <= 1e-5 * Math.max(1, Math.abs(expected)), `${what}: ${actual} vs ${expected}`);

describe('ParameterAverage', () => {
  test('follows d·shadow + (1 − d)·p with the warm-up d = min(decay, (1 + t)/(10 + t))', () => {
    const w = tf.variable(tf.tensor1d([1, -2]), true);
    const average = new ParameterAverage(new Map([['w', w]]), 0.5);
    assert.equal(average.decayAt(1), 2 / 11);
    assert.equal(average.decayAt(100), 0.5);
    const trajectory = [3, 0.5, -4, 7, 2, 2, 9, -1, 5, 6].map((x) => [x, 2 * x]);
    trajectory.forEach(([a, b], i) => {
      w.assign(tf.tensor1d([a!, b!]));
      average.update(i + 1);
    });
    const got = average.shadow.get('w')!.dataSync();
    close(
      got[0]!,
      expectedAverage(
        1,
        trajectory.map(([a]) => a!),
        0.5,
      ),
      'w[0]',
    );
    close(
      got[1]!,
      expectedAverage(
        -2,
        trajectory.map(([, b]) => b!),
        0.5,
      ),
      'w[1]',
    );
    average.dispose();
    w.dispose();
  });

  test('applied() decodes with the average and puts the raw weights back, also when the work throws, leaking nothing', async () => {
    const w = tf.variable(tf.tensor1d([4, 4]), true);
    const average = new ParameterAverage(new Map([['w', w]]), 0.9);
    w.assign(tf.tensor1d([10, -10]));
    average.update(1);
    const shadow = [...average.shadow.get('w')!.dataSync()];
    assert.notDeepEqual(shadow, [10, -10]);
    const before = tf.memory().numTensors;
    const seen = await average.applied(() => [...w.dataSync()]);
    assert.deepEqual(seen, shadow);
    assert.deepEqual([...w.dataSync()], [10, -10]);
    await assert.rejects(
      average.applied(() => {
        throw new Error('decode failed');
      }),
      /decode failed/,
    );
    assert.deepEqual([...w.dataSync()], [10, -10]);
    assert.equal(tf.memory().numTensors, before);
    average.dispose();
    w.dispose();
  });

  test('inferenceTensors: the average under the parameter names, raw ones only where no average exists, no moments', () => {
    const t = (x: number) => ({ shape: [1], data: Float32Array.of(x) });
    const tensors = new Map([
      ['a', t(1)],
      ['ema/a', t(2)],
      ['adam.m/a', t(3)],
      ['b', t(4)],
    ]);
    const out = inferenceTensors(tensors);
    assert.deepEqual(
      [...out].map(([name, v]) => [name, v.data[0]]),
      [
        ['a', 2],
        ['b', 4],
      ],
    );
  });
});

describe('the training loop with an average', () => {
  /** A one-parameter "model" whose update adds 1 to it; its validation reads the parameter. */
  async function runToy(runDir: string, epochs: number, resumeFrom: boolean) {
    const store = new ParamStore(1);
    const w = store.variable('w', [1], { kind: 'zeros' });
    const model = { params: store };
    const config: LoopConfig = {
      epochs,
      checkpointMinutes: 60,
      keepLast: 0,
      schedule: { name: 'plateau', stopAfter: 20 },
      emaDecay: 0.5,
    };
    const schedule = createSchedule(config.schedule, { learningRate: 1 });
    const optimizer = createOptimizer(model, { learningRate: 1, betas: [0.9, 0.999], epsilon: 1e-8, clipNorm: 0 });
    const state = await runEpochs({
      runDir,
      config,
      model,
      optimizer,
      schedule,
      progress: new TrainingProgress(true),
      state: { ...newLoopState(1, schedule), best: -Infinity },
      checkpoint: resumeFrom ? await loadLastCheckpoint(runDir) : null,
      task: {
        unit: 'batch',
        plan: () => ({
          length: 3,
          train: () => {
            w.assign(tf.add(w, 1));
            return { loss: 1, tokens: 1 };
          },
        }),
        validate: () => w.dataSync()[0]!,
        score: (v) => v,
        keepBest: (s, v) => {
          s.best = Math.max(s.best, v);
        },
        report: (e, v) => ({ metrics: { epoch: e.epoch, v }, line: '' }),
        bestText: () => '',
      },
    });
    const raw = w.dataSync()[0]!;
    optimizer.dispose();
    store.dispose();
    return { state, raw };
  }

  test('validates with the average, trains on from the raw weights, saves both, and a resume continues the average', async () => {
    const whole = join(dir, 'loop-whole');
    await mkdir(join(whole, 'checkpoints'), { recursive: true });
    const { raw } = await runToy(whole, 2, false);
    assert.equal(raw, 6, 'six updates of +1 from 0: the average never replaced the raw weights');
    const metrics = readFileSync(join(whole, 'metrics.jsonl'), 'utf8');
    const validated = metrics
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { v: number }).v);
    close(validated[0]!, expectedAverage(0, [1, 2, 3], 0.5), 'epoch 1 validated the average');
    close(validated[1]!, expectedAverage(0, [1, 2, 3, 4, 5, 6], 0.5), 'epoch 2 validated the average');
    const last = await loadCheckpoint(join(whole, 'checkpoints', 'last'));
    assert.equal(last.tensors.get('w')!.data[0], 6);
    close(last.tensors.get('ema/w')!.data[0]!, validated[1]!, 'the checkpoint keeps the average');
    const best = await loadCheckpoint(join(whole, 'checkpoints', 'best'));
    assert.ok(best.tensors.has('ema/w'));

    const cut = join(dir, 'loop-cut');
    await mkdir(join(cut, 'checkpoints'), { recursive: true });
    await runToy(cut, 1, false);
    const resumed = await runToy(cut, 2, true);
    assert.equal(resumed.raw, 6);
    const again = await loadCheckpoint(join(cut, 'checkpoints', 'last'));
    assert.equal(again.tensors.get('ema/w')!.data[0], last.tensors.get('ema/w')!.data[0], 'bit-identical average');
  });
});

describe('a toy run trained with --ema-decay', () => {
  let runDir: string;
  before(async () => {
    const dataDir = await writeToyData(join(dir, 'toy'), { seed: 4, train: 300, val: 12, test: 12 });
    runDir = join(dir, 'run');
    const config = toyRunConfig(dataDir, 'fixed-l2', { epochs: 2, emaDecay: 0.9, valSentences: 8 });
    (await train(config, runDir, { quiet: true })).model.params.dispose();
  });

  test('the rebuilt model holds the average, and the export decodes with it (parity, named in the card)', async () => {
    const run = await RunFolder.open(runDir);
    const dirOfBest = run.findCheckpoint('best');
    const loaded = await loadCheckpoint(dirOfBest);
    let differs = 0;
    for (const [name, t] of loaded.tensors) {
      if (name.startsWith('ema/') || name.startsWith('adam.')) continue;
      const avg = loaded.tensors.get(`ema/${name}`);
      assert.ok(avg, `the checkpoint keeps ema/${name}`);
      for (let i = 0; i < t.data.length; i++) if (t.data[i] !== avg.data[i]) differs += 1;
    }
    assert.ok(differs > 0, 'the average differs from the raw weights');
    const { card, parity } = await exportRun(runDir, join(dir, 'model'), { quiet: true });
    assert.ok(parity.maxScaledDiff <= 1e-4, `parity ${parity.maxScaledDiff}`);
    assert.equal((card.config.checkpoint as { emaDecay?: number }).emaDecay, 0.9);
  });
});

describe('--ema-decay on the command line', () => {
  test('is recorded in the run config, absent when not given; outside (0, 1) it is refused in one line', async () => {
    const dataDir = await writeToyData(join(dir, 'toy-cli'), { seed: 5, train: 50, val: 4, test: 4 });
    const withEma = await newRunConfig(toyRunFlags(dataDir, { emaDecay: 0.999 }), join(dir, 'never-1'));
    assert.equal(withEma.emaDecay, 0.999);
    assert.equal((await newRunConfig(toyRunFlags(dataDir), join(dir, 'never-2'))).emaDecay, undefined);
    const BIN = join(import.meta.dirname, '..', 'bin', 'frost.js');
    const r = spawnSync(
      process.execPath,
      [BIN, 'train', '--data', dataDir, '--src', 'src', '--tgt', 'tgt', '--ema-decay', '1'],
      {
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /--ema-decay must be in \(0, 1\), got '1'/);
  });
});
