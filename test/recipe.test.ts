/**
 * The training recipe (issue #15, part 3) on tiny rnn-attn runs over a small toy corpus:
 *  - the inverse-sqrt schedule's rates (fairseq's inverse_sqrt) and the schedule registry's refusals;
 *  - flags win over an architecture's recipe defaults, which win over the task's; old configs still read;
 *  - a run with label smoothing, inverse-sqrt warm-up, Adam β₂ 0.98 and --max-tokens logs the NLL beside
 *    the smoothed loss and the epoch's tokens, and keeps only the last N epoch checkpoints;
 *  - a run interrupted at an epoch boundary and resumed ends bit-identical to one that was not;
 *  - `--average-last N`: the exported parameters are the mean of the last N epoch checkpoints, the
 *    export passes parity and the card names the checkpoints; too few is refused in one line.
 * The refusals run `frost` in this process as the CLI registers it (helpers/frost-in-process.ts); the
 * recipe's 3-epoch run, which the resumed ones must match, is a cached fixture (helpers/toy-fixtures.ts).
 */
import assert from 'node:assert/strict';
import { readdir, readFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { newRunConfig, type NewRunFlags } from '../clients/cli/commands/train-config.ts';
import { exportRun } from '../export/export-run.ts';
import { getArch } from '../models/index.ts';
import { registerArch } from '../models/archs/registry.ts';
import { initBackend } from '../train/backend/select.ts';
import { loadCheckpoint } from '../train/checkpoint.ts';
import { resolveRecipe } from '../train/recipe.ts';
import { runConfigSchema, type TranslationRunConfigInput } from '../train/run-config.ts';
import { runStatus } from '../report/run-status.ts';
import { RunFolder } from '../train/run-folder.ts';
import { createSchedule, inverseSqrtRate, polynomialDecayRate } from '../train/schedules/index.ts';
import { resume, train } from '../train/trainer.ts';
import { frostInProcess } from './helpers/frost-in-process.ts';
import { cachedToyRun } from './helpers/toy-fixtures.ts';
import { toyRunConfig, toyRunFlags, writeToyData } from './helpers/toy-run.ts';

/** The runs' corpus: the cached run's and this file's own are written alike. */
const CORPUS = { seed: 4, train: 500, val: 16, test: 16 };

let dir: string;
let dataDir: string;

// An architecture that declares a recipe, as the transformer does: rnn-attn under another name.
registerArch({
  ...getArch('rnn-attn'),
  name: 'rnn-attn-with-recipe',
  recipe: {
    labelSmoothing: 0.1,
    adamBetas: [0.9, 0.98],
    lrSchedule: 'inverse-sqrt',
    warmupSteps: 4000,
    learningRate: 5e-4,
  },
});

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-recipe-'));
  dataDir = await writeToyData(join(dir, 'toy'), CORPUS);
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The Transformer recipe, shrunk to a toy run. */
const RECIPE: Partial<TranslationRunConfigInput> = {
  labelSmoothing: 0.1,
  optim: { learningRate: 5e-3, betas: [0.9, 0.98] },
  schedule: { name: 'inverse-sqrt', warmupSteps: 6, warmupInitLr: 1e-4 },
  batch: { maxSentences: 1000, maxTokens: 300 },
  keepLast: 2,
  valSentences: 8,
};

interface Metrics {
  epoch: number;
  step: number;
  trainLoss: number;
  trainNll?: number;
  tokens: number;
  learningRate: number;
  complete: boolean;
}
const metricsOf = async (runDir: string) =>
  (await readFile(join(runDir, 'metrics.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Metrics);

describe('schedules', () => {
  test('inverse-sqrt: linear warm-up from the initial rate, the peak at warmupSteps, then lr·sqrt(warmup/n)', () => {
    assert.equal(inverseSqrtRate(0, 1e-3, 4000, 0), 0);
    assert.equal(inverseSqrtRate(2000, 1e-3, 4000, 0), 5e-4);
    assert.ok(Math.abs(inverseSqrtRate(1000, 1e-3, 4000, 1e-7) - (1e-7 + (1000 * (1e-3 - 1e-7)) / 4000)) < 1e-15);
    assert.equal(inverseSqrtRate(4000, 1e-3, 4000, 0), 1e-3);
    assert.ok(Math.abs(inverseSqrtRate(16000, 1e-3, 4000, 0) - 5e-4) < 1e-15);
    // Update k runs at the rate set after update k − 1, as fairseq's step_update.
    const s = createSchedule({ name: 'inverse-sqrt', stopAfter: 20, warmupSteps: 10 }, { learningRate: 1e-3 });
    assert.equal(s.rateAt(1, 123, 0), 0);
    assert.ok(Math.abs(s.rateAt(6, 123, 0) - 5e-4) < 1e-15);
    assert.equal(s.rateAt(11, 123, 0), 1e-3);
  });

  test('polynomial-decay: warm-up, then a decay to endLr at the budget, per power; the run budget is its default end', () => {
    const shape = { warmupSteps: 10, warmupInitLr: 0, totalUpdates: 110, endLr: 1e-5, power: 1 };
    assert.equal(polynomialDecayRate(0, 1e-3, shape), 0);
    assert.equal(polynomialDecayRate(5, 1e-3, shape), 5e-4);
    assert.equal(polynomialDecayRate(10, 1e-3, shape), 1e-3);
    assert.ok(Math.abs(polynomialDecayRate(60, 1e-3, shape) - (1e-5 + (1e-3 - 1e-5) / 2)) < 1e-15);
    assert.equal(polynomialDecayRate(110, 1e-3, shape), 1e-5);
    assert.equal(polynomialDecayRate(500, 1e-3, shape), 1e-5);
    assert.ok(Math.abs(polynomialDecayRate(60, 1e-3, { ...shape, endLr: 0, power: 2 }) - 2.5e-4) < 1e-15);
    // No warm-up by default: update 1 runs at the peak, and the rate falls to 0 at --max-updates.
    const s = createSchedule({ name: 'polynomial-decay', stopAfter: 20 }, { learningRate: 2e-3, maxUpdates: 100 });
    assert.equal(s.rateAt(1, 123, 0), 2e-3);
    assert.ok(Math.abs(s.rateAt(51, 123, 0) - 1e-3) < 1e-15);
    assert.ok(Math.abs(s.rateAt(100, 123, 0) - 2e-5) < 1e-15);
    // Its own totalUpdates wins over the run's budget.
    const own = createSchedule(
      { name: 'polynomial-decay', stopAfter: 20, totalUpdates: 10 },
      { learningRate: 1, maxUpdates: 100 },
    );
    assert.equal(own.rateAt(11, 1, 0), 0);
  });

  test('polynomial-decay with a time budget and no update budget decays over the training time used', () => {
    const minute = 60_000;
    const s = createSchedule({ name: 'polynomial-decay', stopAfter: 20 }, { learningRate: 2e-3, maxMinutes: 20 });
    assert.equal(s.rateAt(1, 123, 0), 2e-3);
    // Half the time used, whatever the update count: half the rate.
    assert.ok(Math.abs(s.rateAt(7, 123, 10 * minute) - 1e-3) < 1e-15);
    assert.ok(Math.abs(s.rateAt(7000, 123, 10 * minute) - 1e-3) < 1e-15);
    assert.equal(s.rateAt(9000, 123, 20 * minute), 0);
    assert.equal(s.rateAt(9001, 123, 21 * minute), 0);
    // Warm-up still counts updates; an update budget wins over the time budget.
    const warm = createSchedule(
      { name: 'polynomial-decay', stopAfter: 20, warmupSteps: 10, endLr: 1e-4, power: 2 },
      { learningRate: 1e-3, maxMinutes: 10 },
    );
    assert.equal(warm.rateAt(6, 0, 9 * minute), 5e-4);
    assert.ok(Math.abs(warm.rateAt(11, 0, 5 * minute) - (1e-4 + 9e-4 / 4)) < 1e-15);
    const updates = createSchedule(
      { name: 'polynomial-decay', stopAfter: 20 },
      { learningRate: 1, maxUpdates: 100, maxMinutes: 1 },
    );
    assert.ok(Math.abs(updates.rateAt(51, 0, 59_000) - 0.5) < 1e-15);
  });

  test('polynomial-decay without an end (no --max-updates, --max-minutes or totalUpdates), or ending inside its warm-up, is refused', () => {
    assert.throws(
      () => createSchedule({ name: 'polynomial-decay', stopAfter: 20 }, { learningRate: 1 }),
      /'polynomial-decay' decays to the end of a known budget: give --max-updates or --max-minutes/,
    );
    assert.throws(
      () =>
        createSchedule(
          { name: 'polynomial-decay', stopAfter: 20, warmupSteps: 50 },
          { learningRate: 1, maxUpdates: 50 },
        ),
      /its 50 updates leave none after the 50 of warm-up/,
    );
  });

  test('plateau: the paper decay after patience epochs without a gain, and the stop', () => {
    const s = createSchedule({ name: 'plateau', stopAfter: 3, patience: 2, decay: 0.5 }, { learningRate: 1 });
    assert.equal(s.rateAt(7, 0.25, 0), 0.25);
    const verdicts = [10, 9, 8, 7].map((score, epoch) => s.observe(score, epoch, 1));
    assert.deepEqual(
      verdicts.map((v) => [v.improved, v.learningRate, v.stop]),
      [
        [true, 1, false],
        [false, 1, false],
        [false, 0.5, false],
        [false, 1, true],
      ],
    );
  });

  test('an unknown schedule, or an option of another schedule, is refused naming what exists', () => {
    assert.throws(
      () => createSchedule({ name: 'cosine', stopAfter: 20 }, { learningRate: 1 }),
      /^RangeError: unknown learning-rate schedule 'cosine'; known: .*inverse-sqrt.*polynomial-decay/,
    );
    assert.throws(
      () => resolveRecipe('rnn-attn', { warmupSteps: 100 }),
      /learning-rate schedule 'plateau': unknown option 'warmupSteps' \(options: patience, decay\)/,
    );
  });
});

describe('a run on polynomial-decay', () => {
  test("decays over the run's --max-updates: each epoch logs the rate of its last update, and the run stops at the budget", async () => {
    const runDir = join(dir, 'run-poly');
    const config = toyRunConfig(dataDir, 'fixed-l2', {
      optim: { learningRate: 4e-3 },
      schedule: { name: 'polynomial-decay', warmupSteps: 3 },
      batch: { maxSentences: 100 },
      maxUpdates: 12,
      epochs: 10,
      valSentences: 8,
    });
    const result = await train(config, runDir, { quiet: true });
    result.model.params.dispose();
    const metrics = await metricsOf(runDir);
    assert.equal(metrics.at(-1)!.step, 12);
    assert.ok(metrics.length >= 2);
    const shape = { warmupSteps: 3, warmupInitLr: 0, totalUpdates: 12, endLr: 0, power: 1 };
    for (const m of metrics) assert.ok(Math.abs(m.learningRate - polynomialDecayRate(m.step - 1, 4e-3, shape)) < 1e-12);
    assert.ok(metrics.at(-1)!.learningRate < metrics[0]!.learningRate);
  });
});

describe('polynomial-decay over a time budget', () => {
  test('with --max-minutes and no --max-updates the rate falls with the training time used, to near 0 at its end', async () => {
    const runDir = join(dir, 'run-poly-time');
    const minutes = 0.15;
    const config = toyRunConfig(dataDir, 'fixed-l2', {
      optim: { learningRate: 4e-3 },
      schedule: { name: 'polynomial-decay' },
      batch: { maxSentences: 100 },
      maxMinutes: minutes,
      epochs: 1000,
      valSentences: 8,
    });
    const result = await train(config, runDir, { quiet: true });
    result.model.params.dispose();
    const metrics = await metricsOf(runDir);
    assert.ok(metrics.length >= 2, `${metrics.length} epochs in ${minutes} minutes`);
    // Each epoch logs the rate of its last update: lower than the one before, and below the peak from the first.
    for (let i = 1; i < metrics.length; i++) assert.ok(metrics[i]!.learningRate < metrics[i - 1]!.learningRate);
    assert.ok(metrics[0]!.learningRate < 4e-3);
    // The run stopped at its time budget, with the rate set for its last update close to 0 (within one update).
    assert.ok(metrics.at(-1)!.learningRate < 0.1 * 4e-3, `last rate ${metrics.at(-1)!.learningRate}`);
  });
});

describe('recipe defaults', () => {
  test('rnn-attn keeps the paper recipe: no smoothing, Adam 0.9/0.999, plateau, no token batches', () => {
    const r = resolveRecipe('rnn-attn', {});
    assert.deepEqual(r.optim, {});
    assert.deepEqual(r.schedule, { name: 'plateau', stopAfter: 20, patience: 8, decay: 0.8 });
    assert.equal(r.labelSmoothing, undefined);
    const config = runConfigSchema.parse({ ...toyRunConfig(dataDir, 'learned'), ...r, optim: { learningRate: 1e-3 } });
    assert.equal(config.labelSmoothing, 0);
    assert.deepEqual(config.optim.betas, [0.9, 0.999]);
  });

  test("an architecture's recipe applies where no flag is given, and every explicit flag wins", async () => {
    const flags = (extra: Partial<NewRunFlags>) =>
      toyRunFlags(dataDir, { arch: 'rnn-attn-with-recipe', head: 'fixed-l2', ...extra });
    const byArch = await newRunConfig(flags({}), join(dir, 'never-1'));
    assert.equal(byArch.labelSmoothing, 0.1);
    assert.deepEqual(byArch.optim.betas, [0.9, 0.98]);
    assert.equal(byArch.optim.learningRate, 5e-4);
    assert.deepEqual(byArch.schedule, { name: 'inverse-sqrt', stopAfter: 20, warmupSteps: 4000, warmupInitLr: 0 });
    const byFlags = await newRunConfig(
      flags({
        labelSmoothing: 0,
        adamBetas: [0.8, 0.9],
        adamEps: 1e-6,
        lr: 2e-3,
        warmupSteps: 50,
        maxTokens: 700,
        keepLast: 3,
        clipNorm: 0,
      }),
      join(dir, 'never-2'),
    );
    assert.equal(byFlags.labelSmoothing, 0);
    assert.deepEqual(byFlags.optim, { learningRate: 2e-3, betas: [0.8, 0.9], epsilon: 1e-6, clipNorm: 0 });
    assert.deepEqual(byFlags.schedule, { name: 'inverse-sqrt', stopAfter: 20, warmupSteps: 50, warmupInitLr: 0 });
    assert.equal(byFlags.keepLast, 3);
    assert.deepEqual(byFlags.task === 'translation' && byFlags.batch, { maxSentences: 700, maxTokens: 700 });
    // The plateau schedule takes no warm-up: the architecture's warm-up default is dropped, not refused.
    const plateau = await newRunConfig(flags({ lrSchedule: 'plateau' }), join(dir, 'never-3'));
    assert.deepEqual(plateau.schedule, { name: 'plateau', stopAfter: 20, patience: 8, decay: 0.8 });
  });

  test('a config from before the recipe reads with its defaults', () => {
    const old = {
      arch: 'rnn-attn',
      preset: 'tiny',
      archConfig: {},
      head: { name: 'learned', options: {} },
      seed: 1,
      schedule: { patience: 8, decay: 0.8, stopAfter: 20 },
      checkpointMinutes: 5,
      data: { dir: dataDir, kind: 'plain', src: 'src', tgt: 'tgt' },
      tokenizer: 'whitespace',
      optim: { learningRate: 0.001, clipNorm: 5 },
      batch: { maxSentences: 64 },
    };
    const config = runConfigSchema.parse(old);
    assert.deepEqual(config.schedule, { name: 'plateau', patience: 8, decay: 0.8, stopAfter: 20 });
    assert.equal(config.labelSmoothing, 0);
    assert.equal(config.keepLast, 5);
    assert.deepEqual(config.optim, { learningRate: 0.001, clipNorm: 5, betas: [0.9, 0.999], epsilon: 1e-8 });
  });
});

describe('a run with the Transformer recipe', () => {
  let runDir: string;
  before(async () => {
    // Built once per change of the code (read-only): the runs below that resume or extend are trained here.
    ({ runDir } = await cachedToyRun({ head: 'fixed-l2', corpus: CORPUS, config: { ...RECIPE, epochs: 3 } }));
  });

  test('logs the NLL beside the smoothed loss, the tokens of each epoch and the warm-up rates', async () => {
    const metrics = await metricsOf(runDir);
    assert.equal(metrics.length, 3);
    for (const m of metrics) {
      assert.ok(m.trainNll !== undefined && Number.isFinite(m.trainNll));
      assert.ok(Math.abs(m.trainLoss - m.trainNll) > 1e-3, `loss ${m.trainLoss} vs nll ${m.trainNll}`);
      assert.ok(m.tokens > 1000);
      // The rate of the epoch's last update (step n runs at the rate after n − 1 updates).
      assert.ok(Math.abs(m.learningRate - inverseSqrtRate(m.step - 1, 5e-3, 6, 1e-4)) < 1e-12);
    }
    assert.equal(new Set(metrics.map((m) => m.tokens)).size, 1, 'every epoch trains on the same tokens');
    assert.ok(metrics[2]!.trainNll! < metrics[0]!.trainNll!);
  });

  test('keeps only the last --keep-last epoch checkpoints', async () => {
    const names = (await readdir(join(runDir, 'checkpoints'))).sort();
    assert.deepEqual(
      names.filter((n) => n.startsWith('epoch-')),
      ['epoch-0002', 'epoch-0003'],
    );
    assert.ok(names.includes('last'));
  });

  test('--average-last 2 exports the mean of the last two epoch checkpoints, with parity, named in the card', async () => {
    const [a, b] = await Promise.all(
      ['epoch-0002', 'epoch-0003'].map((n) => loadCheckpoint(join(runDir, 'checkpoints', n))),
    );
    const run = await RunFolder.open(runDir);
    const { checkpoint, averaged } = await run.averageLast(2);
    assert.deepEqual(
      averaged.map((c) => c.epoch),
      [2, 3],
    );
    assert.equal(checkpoint.tensors.size, a!.tensors.size);
    let differs = 0;
    for (const [name, t] of checkpoint.tensors) {
      const [x, y] = [a!.tensors.get(name)!.data, b!.tensors.get(name)!.data];
      for (let i = 0; i < t.data.length; i++) {
        assert.equal(t.data[i], Math.fround((x[i]! + y[i]!) / 2), `${name}[${i}]`);
        if (x[i] !== y[i]) differs += 1;
      }
    }
    assert.ok(differs > 0, 'the two checkpoints differ, so the mean is neither');
    const { card, parity } = await exportRun(runDir, join(dir, 'model-avg'), { averageLast: 2, quiet: true });
    assert.ok(parity.maxScaledDiff <= 1e-4);
    const source = card.config.checkpoint as {
      which: string;
      averaged: { epoch: number; dir: string; sha256: string }[];
    };
    assert.equal(source.which, 'average-last-2');
    assert.equal(card.metrics.valBleu, undefined, 'no validation BLEU claimed for a model never validated');
    assert.deepEqual(
      source.averaged.map((c) => [c.epoch, c.dir]),
      [
        [2, 'epoch-0002'],
        [3, 'epoch-0003'],
      ],
    );
    assert.match(source.averaged[0]!.sha256, /^[0-9a-f]{64}$/);
  });

  test('frost export --average-last with more checkpoints than kept is refused in one line naming the run', async () => {
    const r = await frostInProcess(['export', runDir, '--out', join(dir, 'never'), '--average-last', '3']);
    const lines = r.stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('tfjs backend:'));
    assert.equal(r.code, 1, r.stderr);
    assert.ok(lines.length <= 2, r.stderr);
    assert.ok(lines[0]!.includes(runDir), lines[0]);
    assert.match(lines[0]!, /keeps 2 epoch checkpoints \(epochs 2, 3\), fewer than --average-last 3/);
  });

  test('an interrupted run resumes exactly: the same parameters, optimiser state and rates as an uninterrupted one', async () => {
    const cut = join(dir, 'run-cut');
    const first = await train(toyRunConfig(dataDir, 'fixed-l2', { ...RECIPE, epochs: 1 }), cut, { quiet: true });
    first.model.params.dispose();
    const second = await resume(cut, { epochs: 3 }, { quiet: true });
    second.model.params.dispose();
    const [whole, resumed] = await Promise.all(
      [runDir, cut].map((d) => loadCheckpoint(join(d, 'checkpoints', 'last'))),
    );
    assert.equal(resumed!.tensors.size, whole!.tensors.size);
    for (const [name, t] of whole!.tensors)
      assert.deepEqual(resumed!.tensors.get(name)!.data, t.data, `${name} after resuming`);
    const strip = (m: Metrics[]) =>
      m.map(({ epoch, step, trainLoss, trainNll, tokens, learningRate }) => ({
        epoch,
        step,
        trainLoss,
        trainNll,
        tokens,
        learningRate,
      }));
    assert.deepEqual(strip(await metricsOf(cut)), strip(await metricsOf(runDir)));
    assert.deepEqual(
      (resumed!.state as { schedule: unknown }).schedule,
      (whole!.state as { schedule: unknown }).schedule,
    );
  });
  test('--max-updates stops mid-epoch at that update; a larger one continues to the uninterrupted parameters', async () => {
    const perEpoch = (await metricsOf(runDir))[0]!.step;
    const cut = join(dir, 'run-updates');
    const first = await train(toyRunConfig(dataDir, 'fixed-l2', { ...RECIPE, maxUpdates: perEpoch + 2 }), cut, {
      quiet: true,
    });
    first.model.params.dispose();
    assert.deepEqual(
      [first.steps, first.epochs, first.stopReason],
      [perEpoch + 2, 1, `reached ${perEpoch + 2} updates`],
    );
    const partial = (await metricsOf(cut)).at(-1)!;
    assert.equal(partial.complete, false);
    assert.equal((await runStatus(cut, { updates: perEpoch + 2 })).kind, 'finished');
    assert.equal((await runStatus(cut, { updates: 3 * perEpoch })).kind, 'unfinished');
    const second = await resume(cut, { maxUpdates: 3 * perEpoch }, { quiet: true });
    second.model.params.dispose();
    // The budget ran out on an epoch's last batch: that epoch is whole.
    assert.deepEqual([second.steps, second.epochs], [3 * perEpoch, 3]);
    const [whole, resumed] = await Promise.all(
      [runDir, cut].map((d) => loadCheckpoint(join(d, 'checkpoints', 'last'))),
    );
    for (const [name, t] of whole!.tensors)
      assert.deepEqual(resumed!.tensors.get(name)!.data, t.data, `${name} after extending the update budget`);
  });
});

test('recipe flags with --resume are refused in one line: the run keeps the recipe it started with', async () => {
  const r = await frostInProcess([
    'train',
    '--resume',
    join(dir, 'somewhere'),
    '--label-smoothing',
    '0.2',
    '--adam-betas',
    '0.9,0.98',
  ]);
  const lines = r.stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('tfjs backend:'));
  assert.equal(r.code, 1, r.stderr);
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0]!, /--label-smoothing, --adam-betas: the recipe is fixed when a run starts/);
});

test('frost train --lr-schedule polynomial-decay without --max-updates or --max-minutes is refused in one line, before any data is read', async () => {
  const runDir = join(dir, 'run-poly-refused');
  const r = await frostInProcess([
    'train',
    '--data',
    dataDir,
    '--preset',
    'tiny',
    '--lr-schedule',
    'polynomial-decay',
    '--out',
    runDir,
  ]);
  const lines = r.stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('tfjs backend:'));
  assert.equal(r.code, 1, r.stderr);
  assert.equal(lines.length, 1, r.stderr);
  assert.match(
    lines[0]!,
    /'polynomial-decay' decays to the end of a known budget: give --max-updates or --max-minutes/,
  );
  const written = await readdir(runDir).catch(() => []);
  assert.ok(!written.some((f) => f.startsWith('vocab.')), `no vocabulary prepared: ${written.join(', ')}`);
});
