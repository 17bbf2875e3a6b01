/**
 * `frost experiment --executor slurm` on a real single-node Slurm cluster (helpers/slurm-cluster.ts: Debian's
 * slurm-wlm and munge, started here): a 4-cell grid (two heads × two seeds) submitted as one job array and a report
 * job that waits for it; one task told its time is nearly up (SIGUSR1 to its batch shell, as `--signal=B:USR1@...`
 * does) saves, requeues itself and resumes from its checkpoint; `frost experiment status` reads the states; and the
 * report equals the local executor's for the same grid and seeds, bit for bit where training is concerned (a cached
 * fixture, helpers/local-grid.ts).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { gridRuns, threadsPerRun } from '../experiments/grid.ts';
import { sacctStates } from '../experiments/slurm/commands.ts';
import { readSubmissions } from '../experiments/slurm/records.ts';
import { readMetrics } from '../report/run-status.ts';
import { type Report, reportSchema } from '../report/schema.ts';
import { readCheckpointInfo } from '../train/run-folder.ts';
import { frostInProcess } from './helpers/frost-in-process.ts';
import { cachedLocalGrid } from './helpers/local-grid.ts';
import { type SlurmCluster, startSlurmCluster } from './helpers/slurm-cluster.ts';
import { type ToyCorpusSize, writeToyData } from './helpers/toy-run.ts';

const HEADS = ['learned', 'fixed-l2'];
const SEEDS = [1, 2];
const CELLS = HEADS.length * SEEDS.length;
const EPOCHS = 6;
/** 96 training pairs in batches of 8. */
const UPDATES_PER_EPOCH = 12;
const CORPUS: ToyCorpusSize = { seed: 1, train: 96, val: 8, test: 16 };
const GRID = ['experiment', 'mt-heads', '--heads', HEADS.join(','), '--seeds', SEEDS.join(',')]
  .concat(['--max-epochs', String(EPOCHS), '--preset', 'tiny', '--beam', '1'])
  .concat(['--train-flags', '--batch-size 8 --val-sentences 8']);
/** The wasm threads the local executor gives each of the grid's trainers here; each task gets as many CPUs. */
const THREADS = threadsPerRun(CELLS);
/** Signalled: the first cell, src-tgt-learned-seed1. */
const SIGNALLED = 0;

let dir: string;
let dataDir: string;
let cluster: SlurmCluster | undefined;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'frost-exp-slurm-'));
  dataDir = await writeToyData(join(dir, 'toy'), CORPUS);
  cluster = await startSlurmCluster({ cpus: CELLS * THREADS });
  process.env.SLURM_CONF = cluster.env.SLURM_CONF;
});

after(async () => {
  delete process.env.SLURM_CONF;
  await cluster?.stop();
  await rm(dir, { recursive: true, force: true });
});

const squeueState = async (jobId: string) =>
  (await cluster!.client('squeue', ['--noheader', '--states=all', `--jobs=${jobId}`, '--format=%T'])).trim();

/** The parts of a report that say what trained and how it scored: not where the files are, nor timings. */
function trained(report: Report) {
  return {
    title: report.title,
    runs: report.runs.map((r) => ({
      id: r.id,
      head: r.head,
      seed: r.seed,
      epochs: r.training.epochs,
      steps: r.training.steps,
      valBleuCurve: r.training.valBleuCurve,
      checkpoint: r.checkpoint,
      params: r.params,
      baseline: r.baseline,
      bleuDelta: r.bleuDelta,
      test: { bleu: r.test.bleu, words: r.test.words, vocabUsage: r.test.vocabUsage },
    })),
  };
}

describe('frost experiment --executor slurm', { timeout: 300_000 }, () => {
  test('trains a grid as a job array, requeues a signalled task that resumes, and reports as the local executor', async (t) => {
    const local = cachedLocalGrid({ name: 'slurm-local-grid', corpus: CORPUS, argv: GRID });
    local.catch(() => undefined); // awaited at the end, built meanwhile when it is not cached
    const out = join(dir, 'grid');
    const submit = await frostInProcess([
      ...GRID,
      ...['--data', dataDir, '--out', out, '--executor', 'slurm', '--sbatch', `--cpus-per-task=${THREADS}`],
    ]);
    assert.equal(submit.code, 0, submit.stderr);
    const [submission] = await readSubmissions(out);
    assert.ok(submission, 'the jobs are recorded');
    const { array, report } = submission;
    assert.match(submit.stdout, new RegExp(`^submitted to Slurm: array job ${array} trains src-tgt-learned-seed1, `));
    assert.deepEqual(submission.cells, [
      'src-tgt-learned-seed1',
      'src-tgt-learned-seed2',
      'src-tgt-fixed-l2-seed1',
      'src-tgt-fixed-l2-seed2',
    ]);
    assert.deepEqual(submission.sbatch, [`--cpus-per-task=${THREADS}`]);
    const script = await readFile(join(out, 'slurm', 'array.sbatch'), 'utf8');
    assert.match(script, /^#SBATCH --array=0-3$/m);
    assert.match(script, /^#SBATCH --requeue$/m);
    assert.match(script, /^#SBATCH --signal=B:USR1@120$/m);

    // The first cell's task, once it has saved an epoch and has more to go, is told its time is nearly up.
    const runDir = join(out, submission.cells[SIGNALLED]!);
    for (;;) {
      const last = await readCheckpointInfo(runDir, 'last').catch(() => null);
      if (last !== null && last.epoch >= 1) {
        assert.ok(last.epoch < EPOCHS, `${runDir} finished before it was signalled`);
        break;
      }
      assert.ok(!['FAILED', 'COMPLETED', 'CANCELLED'].includes(await squeueState(array)), await cluster!.logs());
      await sleep(100);
    }
    const task = `${array}_${SIGNALLED}`;
    const taskJob = (await cluster!.client('squeue', ['--noheader', `--jobs=${task}`, '--format=%A'])).trim();
    await cluster!.client('scancel', ['--signal=USR1', '--batch', taskJob]);

    const started = Date.now();
    for (;;) {
      const state = await squeueState(report);
      if (!['PENDING', 'RUNNING', 'COMPLETING', 'CONFIGURING'].includes(state)) {
        assert.equal(state, 'COMPLETED', `the report job ended ${state}`);
        break;
      }
      assert.ok(Date.now() - started < 240_000, `the report job is still ${state}\n${await cluster!.logs()}`);
      await sleep(500);
    }
    t.diagnostic(`signal to report written: ${((Date.now() - started) / 1000).toFixed(1)} s`);

    const slurmLog = await readFile(join(out, 'logs', `slurm-${array}_${SIGNALLED}.out`), 'utf8');
    t.diagnostic(slurmLog);
    assert.match(slurmLog, /SIGUSR1: the time limit is near; stopping src-tgt-learned-seed1 to requeue it/);
    assert.match(slurmLog, new RegExp(`requeueing job ${taskJob}; it resumes from its checkpoint`));
    assert.match(slurmLog, /src-tgt-learned-seed1: resuming at/);
    const trainLog = await readFile(join(out, 'logs', 'src-tgt-learned-seed1.train.log'), 'utf8');
    assert.match(trainLog, /interrupted by SIGTERM at epoch \d, batch \d+, step \d+: saved/);
    for (const name of submission.cells) {
      const last = await readCheckpointInfo(join(out, name), 'last');
      assert.deepEqual([last?.epoch, last?.step], [EPOCHS, EPOCHS * UPDATES_PER_EPOCH], name);
      const metrics = await readMetrics(join(out, name));
      assert.deepEqual(
        metrics.filter((m) => m.complete).map((m) => m.epoch),
        Array.from({ length: EPOCHS }, (_, i) => i + 1),
        `${name}: each epoch validated once`,
      );
    }

    const status = await frostInProcess(['experiment', 'status', out]);
    assert.equal(status.code, 0, status.stderr);
    t.diagnostic(status.stdout);
    for (const [i, name] of submission.cells.entries())
      assert.match(
        status.stdout,
        new RegExp(`^${array}_${i} +${name} +COMPLETED +finished \\(reached ${EPOCHS} epochs\\)`, 'm'),
      );
    assert.match(status.stdout, new RegExp(`^${report} +report +COMPLETED`, 'm'));
    // No accounting on this cluster: sacct says so, and status relies on squeue and the folders.
    assert.equal(await sacctStates([array]), null);

    const slurmReport = reportSchema.parse(JSON.parse(await readFile(join(out, 'report', 'report.json'), 'utf8')));
    const localOut = await local;
    const localReport = reportSchema.parse(JSON.parse(await readFile(join(localOut, 'report', 'report.json'), 'utf8')));
    assert.deepEqual(trained(slurmReport), trained(localReport));
    assert.ok(!existsSync(join(localOut, 'slurm')), 'the local executor keeps no Slurm records');
  });
});

describe('the seed axis and the executor flags', () => {
  test('folder names carry the seed only when the grid has more than one', () => {
    const pairs = [{ src: 'de', tgt: 'en' }];
    assert.deepEqual(
      gridRuns({ out: '/g', pairs, heads: ['learned', 'tied'], seeds: [1, 2] }).map((r) => [r.dir, r.seed]),
      [
        ['/g/de-en-learned-seed1', 1],
        ['/g/de-en-learned-seed2', 2],
        ['/g/de-en-tied-seed1', 1],
        ['/g/de-en-tied-seed2', 2],
      ],
    );
    assert.deepEqual(
      gridRuns({ out: '/g', pairs, heads: ['learned'], seeds: [7] }).map((r) => [r.dir, r.seed]),
      [['/g/de-en-learned', 7]],
    );
    assert.throws(() => gridRuns({ out: '/g', pairs, heads: ['learned'], seeds: [1, 1] }), /seeds repeat/);
  });

  test('flags that do not fit are refused before anything trains or is submitted', async () => {
    const out = join(dir, 'refused');
    const base = ['experiment', 'mt-heads', '--data', dataDir, '--max-epochs', '1', '--preset', 'tiny', '--out', out];
    const cases: [string[], RegExp][] = [
      [['--executor', 'slurm', '--sbatch', '--array=0-9'], /--sbatch --array=0-9: frost sets the array/],
      [['--sbatch', '--time=1:00'], /--sbatch is for --executor slurm/],
      [['--executor', 'nowhere'], /unknown grid executor 'nowhere'; known: local, slurm/],
      [['--seed', '3', '--seeds', '1,2'], /give --seed or --seeds, not both/],
    ];
    for (const [flags, message] of cases) {
      const r = await frostInProcess([...base, ...flags]);
      assert.equal(r.code, 1, flags.join(' '));
      assert.match(r.stderr, message);
    }
    const caption = await frostInProcess(
      ['experiment', 'caption-heads', '--data', 'toy', '--max-epochs', '1'].concat([
        '--executor',
        'slurm',
        '--out',
        out,
      ]),
    );
    assert.match(caption.stderr, /caption-heads trains on the local executor with one seed/);
    assert.ok(!existsSync(join(out, 'slurm')), 'nothing was submitted');
  });
});
