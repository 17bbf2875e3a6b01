/**
 * `frost experiment` stopped by a signal sent to it alone (`kill PID`, a service manager, a CI timeout): it
 * forwards the signal to its trainers, which save and exit, starts no queued run, exits 143 naming the runs
 * it stopped, leaves no trainer behind, and the same command run again resumes the runs where they saved and
 * ends as an uninterrupted run would have, bit for bit. Also: how experiments/live-children.ts treats
 * its children on a first and a second signal, with stand-in children. The experiments that get the signals
 * are bin/frost.js children; the rerun runs in this process as the CLI registers it
 * (helpers/frost-in-process.ts), and the run left alone to compare with is a cached fixture.
 */
import assert from 'node:assert/strict';
import { type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sideBySideThreads } from '../experiments/grid.ts';
import { ExperimentInterrupted, LiveChildren } from '../experiments/live-children.ts';
import { readMetrics } from '../report/run-status.ts';
import { readCheckpointInfo } from '../train/run-folder.ts';
import { readRunLock, runLockPath } from '../train/run-lock.ts';
import { processAlive, startFrost } from './helpers/frost-cli.ts';
import { frostInProcess } from './helpers/frost-in-process.ts';
import { type ToyCorpusSize, writeToyData } from './helpers/toy-run.ts';
import { cachedTrainChildRun, DATA_DIR, RUN_DIR } from './helpers/train-child-fixtures.ts';

const HEADS = ['learned', 'fixed-l2', 'tied'];
/** Enough that a run the machine favours is still training when the slowest has saved its first epoch. */
const EPOCHS = 8;
/** 200 training pairs in batches of 8. */
const UPDATES_PER_EPOCH = 25;
const TRAIN_FLAGS = ['--batch-size', '8', '--val-sentences', '8'];
const CORPUS: ToyCorpusSize = { seed: 1, train: 200, val: 8, test: 8 };

let dir: string;
let dataDir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'frost-exp-signals-'));
  dataDir = await writeToyData(join(dir, 'toy'), CORPUS);
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('frost experiment stopped by SIGTERM', { timeout: 300_000 }, () => {
  test('forwards it, starts nothing new, exits 143 with no trainer left; the rerun ends as if never stopped', async (t) => {
    const out = join(dir, 'grid');
    const runDir = (head: string) => join(out, `src-tgt-${head}`);
    // Two at a time: the third run is queued when the signal comes, and must not start.
    const argv = ['experiment', 'mt-heads', '--data', dataDir, '--heads', HEADS.join(','), '--jobs', '2'];
    argv.push('--max-epochs', String(EPOCHS), '--preset', 'tiny', '--beam', '1');
    argv.push('--train-flags', TRAIN_FLAGS.join(' '), '--out', out);
    const first = startFrost(argv);
    // Training for sure: both running runs have saved their first epoch (and have more to go).
    const pids = new Map<string, number>();
    for (;;) {
      assert.equal(first.child.exitCode, null, `the experiment ended before the signal:\n${first.stderr()}`);
      for (const head of HEADS.slice(0, 2)) {
        const holder = readRunLock(runDir(head));
        if (holder !== null && holder !== 'malformed') pids.set(head, holder.pid);
      }
      const saved = await Promise.all(HEADS.slice(0, 2).map((h) => readCheckpointInfo(runDir(h), 'last')));
      if (saved.every((s) => s !== null && s.epoch >= 1)) break;
      await sleep(50);
    }
    assert.equal(pids.size, 2, 'each running trainer holds its folder');
    first.child.kill('SIGTERM');
    const stopped = await first.exited;
    t.diagnostic(stopped.stderr);
    assert.equal(stopped.code, 143, stopped.stderr);
    assert.match(
      stopped.stderr,
      /^frost experiment: SIGTERM: stopping src-tgt-learned, src-tgt-fixed-l2: each saves where it is/m,
    );
    const message =
      /^frost: experiment stopped by SIGTERM: stopped src-tgt-learned \(saved at step (\d+)\), src-tgt-fixed-l2 \(saved at step (\d+)\); not started: src-tgt-tied$/m.exec(
        stopped.stderr,
      );
    assert.ok(message, stopped.stderr);
    assert.ok(stopped.stderr.includes(`rerun \`frost ${argv.slice(0, -3).join(' ')} '${TRAIN_FLAGS.join(' ')}' --out`));
    assert.doesNotMatch(stopped.stderr, /\n\s+at /, 'no stack trace');

    for (const [i, head] of HEADS.slice(0, 2).entries()) {
      assert.ok(!processAlive(pids.get(head)!), `${head}: its trainer (pid ${pids.get(head)}) is gone`);
      assert.ok(!existsSync(runLockPath(runDir(head))), `${head}: its lock is released`);
      const last = await readCheckpointInfo(runDir(head), 'last');
      assert.equal(last?.step, Number(message[i + 1]), head);
      // At least the first epoch (a signal right at its end saves that step again), short of the cap.
      assert.ok(last.step >= UPDATES_PER_EPOCH && last.step < EPOCHS * UPDATES_PER_EPOCH, `${head}: ${last.step}`);
      const log = await readFile(join(out, 'logs', `src-tgt-${head}.train.log`), 'utf8');
      assert.match(log, new RegExp(`interrupted by SIGTERM at epoch \\d, batch \\d+, step ${last.step}: saved`));
      assert.doesNotMatch(log, /SIGTERM again|second SIGTERM/, 'one signal reached it');
    }
    assert.ok(!existsSync(join(runDir('tied'), 'config.json')), 'the queued run never started');

    // The learned run as the experiment starts it (its arguments, its trainers' threads), left alone, to compare with.
    const alone = cachedTrainChildRun(
      'experiment-signals-learned',
      CORPUS,
      ['--arch', 'rnn-attn', '--head', 'learned', '--data', DATA_DIR, '--src', 'src', '--tgt', 'tgt']
        .concat(['--preset', 'tiny', '--seed', '1', '--out', RUN_DIR, ...TRAIN_FLAGS])
        .concat(['--epochs', String(EPOCHS), '--quiet']),
      sideBySideThreads(2),
    );
    alone.catch(() => undefined); // awaited below, after the rerun
    const done = await frostInProcess(argv);
    assert.equal(done.code, 0, done.stderr);
    for (const head of HEADS.slice(0, 2)) assert.match(done.stderr, new RegExp(`src-tgt-${head}: resuming at`));
    for (const head of HEADS) {
      const last = await readCheckpointInfo(runDir(head), 'last');
      assert.deepEqual([last?.epoch, last?.step], [EPOCHS, EPOCHS * UPDATES_PER_EPOCH], head);
      const metrics = await readMetrics(runDir(head));
      assert.deepEqual(
        metrics.filter((m) => m.complete).map((m) => m.epoch),
        Array.from({ length: EPOCHS }, (_, i) => i + 1),
        `${head}: each epoch validated once`,
      );
    }
    const { runDir: reference } = await alone;
    const tensors = (run: string) => readFile(join(run, 'checkpoints', 'last', 'tensors.bin'));
    assert.ok((await tensors(runDir('learned'))).equals(await tensors(reference)), 'the same parameters as left alone');
    const scores = async (run: string) => (await readMetrics(run)).map((m) => [m.epoch, m.step, m.valBleu]);
    assert.deepEqual(await scores(runDir('learned')), await scores(reference));
    assert.ok(existsSync(join(out, 'report', 'report.json')));
  });
});

describe('frost experiment killed outright', { timeout: 120_000 }, () => {
  test('its trainer notices its parent is gone, saves and exits instead of training on as an orphan', async () => {
    const out = join(dir, 'killed');
    const runDir = join(out, 'src-tgt-learned');
    const argv = ['experiment', 'mt-heads', '--data', dataDir, '--heads', 'learned', '--max-epochs', '50'];
    argv.push('--preset', 'tiny', '--train-flags', TRAIN_FLAGS.join(' '), '--out', out);
    const experiment = startFrost(argv);
    let pid: number | undefined;
    for (;;) {
      assert.equal(experiment.child.exitCode, null, experiment.stderr());
      const holder = readRunLock(runDir);
      if (holder !== null && holder !== 'malformed') pid = holder.pid;
      if (pid !== undefined && ((await readCheckpointInfo(runDir, 'last'))?.epoch ?? 0) >= 1) break;
      await sleep(50);
    }
    const before = (await readCheckpointInfo(runDir, 'last'))!;
    experiment.child.kill('SIGKILL');
    await experiment.exited;
    const killedAt = Date.now();
    // It checks its parent once a second. (Its stderr went to the experiment, so there is no log to read.)
    while (processAlive(pid!) && Date.now() - killedAt < 30_000) await sleep(100);
    assert.ok(!processAlive(pid!), `the trainer (pid ${pid}) is gone`);
    assert.ok(!existsSync(runLockPath(runDir)), 'its lock is released');
    const after = (await readCheckpointInfo(runDir, 'last'))!;
    assert.ok(after.step > before.step, `saved where it was stopped: step ${before.step} -> ${after.step}`);
    assert.equal(after.state.done, false);
  });
});

/** A stand-in for a trainer: says which signals it gets on stdout, and ignores them (a save that takes long). */
const STANDIN = `
  for (const s of ['SIGINT', 'SIGTERM']) process.on(s, () => process.stdout.write(s + '\\n'));
  process.stdout.write('ready ' + (process.env.FROST_SIGNALS_FORWARDED ?? '-') + '\\n');
  setTimeout(() => undefined, 30_000);`;

function standIn(
  children: LiveChildren,
  name: string,
): { child: ChildProcess; stdout: () => string; ready: Promise<void> } {
  const child = children.spawn(name, process.execPath, ['-e', STANDIN], { stdio: ['ignore', 'pipe', 'ignore'] });
  let stdout = '';
  const ready = new Promise<void>((resolve) =>
    child.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (stdout.includes('ready')) resolve();
    }),
  );
  return { child, stdout: () => stdout, ready };
}

const exitOf = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve(child.signalCode)
    : new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, signal) => resolve(signal)));

describe('the children of frost experiment', () => {
  test('a first signal is forwarded once and nothing new starts; a second kills them at once and exits', async () => {
    const lines: string[] = [];
    const exits: number[] = [];
    const children = new LiveChildren(
      (line) => lines.push(line),
      (code) => exits.push(code),
    );
    children.watch();
    try {
      const a = standIn(children, 'run-a');
      const b = standIn(children, 'run-b');
      await Promise.all([a.ready, b.ready]);
      assert.deepEqual(children.running, ['run-a', 'run-b']);
      children.receive('SIGTERM');
      assert.equal(children.signal, 'SIGTERM');
      assert.match(lines[0]!, /^frost experiment: SIGTERM: stopping run-a, run-b: each saves where it is/);
      assert.deepEqual(exits, [], 'waits for its children');
      assert.throws(
        () => children.spawn('run-c', process.execPath, ['-e', ''], {}),
        (err: Error) => err instanceof ExperimentInterrupted && !err.started && err.exitCode === 143,
      );
      while (!(a.stdout().includes('SIGTERM') && b.stdout().includes('SIGTERM'))) {
        assert.deepEqual(children.running, ['run-a', 'run-b'], 'they outlive the signal they ignore');
        await sleep(20);
      }
      // Told that their signals are forwarded, so a terminal's copy and the forwarded one are one stop.
      for (const c of [a, b]) assert.equal(c.stdout(), `ready ${process.pid}\nSIGTERM\n`);

      children.receive('SIGTERM');
      assert.match(lines[1]!, /^frost experiment: second SIGTERM: killed run-a, run-b at once, without saving$/);
      assert.deepEqual(exits, [143]);
      assert.deepEqual(await Promise.all([exitOf(a.child), exitOf(b.child)]), ['SIGKILL', 'SIGKILL']);
      assert.deepEqual(children.running, []);
    } finally {
      children.unwatch();
    }
  });

  test('a signal while no child runs ends the experiment at once', () => {
    const lines: string[] = [];
    const exits: number[] = [];
    const children = new LiveChildren(
      (line) => lines.push(line),
      (code) => exits.push(code),
    );
    children.receive('SIGINT');
    assert.deepEqual(exits, [130]);
    assert.match(lines[0]!, /^frost experiment: SIGINT: stopped \(no run was training\); rerun the same command/);
  });
});
