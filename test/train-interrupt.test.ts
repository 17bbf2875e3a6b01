/**
 * `frost train` stopped by SIGTERM and SIGINT in the middle of an epoch, through the real CLI (bin/frost.js
 * in child processes): each signal saves `last` at the update it arrived in and exits 143 or 130 with the
 * resume command, and the run resumed twice ends with the same parameters and Adam moments, bit for bit, as
 * the same run left alone (tfjs wasm, its GEMMs in OpenBLAS, and a seeded batch order are deterministic
 * here). No periodic save happens in these runs (they last seconds; checkpointMinutes is 5), so `last` is
 * the signal's save. The run left alone is a cached fixture (cli-train-fixtures.ts), made by the same
 * `frost train` command in-process: bit for bit what a child makes, once per change of the code; so is each
 * run's last session, which no signal stops. Also: a language model stopped at a window, and the second
 * signal, which ends the process at once.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { readCheckpointInfo } from '../train/run-folder.ts';
import { cachedCliTrainRun, DATA_DIR, RUN_DIR } from './helpers/cli-train-fixtures.ts';
import { frost, tinyTrainArgs } from './helpers/frost-cli.ts';
import { frostInProcess } from './helpers/frost-in-process.ts';
import { writeMarkovCorpus } from './helpers/lm-run.ts';
import { writeToyData } from './helpers/toy-run.ts';

const BATCHES = 150;
// 600 pairs in batches of 4: an epoch of 150 updates (1-3 s here), so a signal sent after the first
// lands mid-epoch even when this process is slow to send it.
const CORPUS = { seed: 1, train: 600, val: 16, test: 4 };
let dir: string;
let dataDir: string;
let lmDataDir: string;
/** The interrupted run's twin, left alone. */
let reference: string;

const trainArgs = (runDir: string) => tinyTrainArgs(dataDir, runDir);

/** The `interrupted by ...` line, parsed; fails the test when it is missing. */
function interruptedLine(stderr: string, signal: string, runDir: string) {
  const m = new RegExp(
    `^frost: interrupted by ${signal} at epoch (\\d+), batch (\\d+), step (\\d+): saved; resume with \`frost train --resume (.+)\`$`,
    'm',
  ).exec(stderr);
  assert.ok(m, `no interruption line:\n${stderr}`);
  assert.match(stderr, new RegExp(`^frost: ${signal}: saving where the run is; send it again to stop at once`, 'm'));
  assert.equal(m[4], runDir);
  assert.doesNotMatch(stderr, /\n\s+at /, 'no stack trace');
  return { epoch: Number(m[1]), batch: Number(m[2]), step: Number(m[3]) };
}

async function metricsLines(runDir: string): Promise<Record<string, unknown>[]> {
  const path = join(runDir, 'metrics.jsonl');
  if (!existsSync(path)) return [];
  return (await readFile(path, 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'frost-interrupt-'));
  dataDir = await writeToyData(join(dir, 'toy'), CORPUS);
  ({ dataDir: lmDataDir } = await writeMarkovCorpus(dir, { train: 5000, valid: 800, test: 800 }));
  // Before any child starts, and outside the tests' timeout: a build on a cold cache trains in this process,
  // which would hold up its reaction to the children's stderr, hence their signals.
  ({ runDir: reference } = await cachedCliTrainRun('interrupt-reference', CORPUS, tinyTrainArgs(DATA_DIR, RUN_DIR)));
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('an interrupted frost train saves where it is', { timeout: 180_000 }, () => {
  test('SIGTERM, SIGINT with no stderr reader, SIGINT at the end of the epoch, a resume: as if left alone', async (t) => {
    const runDir = join(dir, 'interrupted');

    const first = await frost(trainArgs(runDir), { signal: 'SIGTERM', when: /^epoch 1 batch \d+\//m, runDir });
    assert.equal(first.code, 143, first.stderr);
    assert.equal(first.savedBefore, false, 'no checkpoint before the signal');
    const at = interruptedLine(first.stderr, 'SIGTERM', runDir);
    assert.equal(at.epoch, 1);
    assert.ok(at.batch > 0 && at.batch < BATCHES, `mid-epoch: batch ${at.batch}`);
    assert.equal(at.step, at.batch);
    assert.ok(!existsSync(join(runDir, 'train.lock')), 'the run folder lock is released on the way out');
    const saved = await readCheckpointInfo(runDir, 'last');
    assert.deepEqual([saved?.step, saved?.epoch, saved?.state.batch, saved?.state.done], [at.step, 0, at.batch, false]);
    assert.deepEqual(await metricsLines(runDir), [], 'the interrupted epoch was not validated: no metrics line');

    const resumeArgs = ['train', '--resume', runDir, '--backend', 'wasm'];
    const resumedLine = new RegExp(
      `resumed at epoch 1, batch ${at.batch}, step ${at.step} \\(from checkpoints/last\\)\\n[^]*^epoch \\d batch \\d+/`,
      'm',
    );
    // Its stderr closed first, as when Ctrl-C on `frost experiment` ends the grid that reads it: the run
    // must save all the same (its write of the notice to the closed pipe must not end it).
    const second = await frost(resumeArgs, { signal: 'SIGINT', when: resumedLine, runDir, closeStderr: true });
    assert.equal(second.code, 130, second.stderr);
    const state2 = (await readCheckpointInfo(runDir, 'last'))?.state;
    const at2 = { epoch: Number(state2?.epoch) + 1, batch: Number(state2?.batch), step: Number(state2?.step) };
    assert.ok(at2.step > at.step, `the resumed session trained: step ${at.step} -> ${at2.step}`);
    assert.ok(at2.epoch === 1 && at2.batch === at2.step && at2.batch < BATCHES, `mid-epoch: ${JSON.stringify(at2)}`);

    // Signalled after the epoch's last update: either seen before validation (the epoch is saved whole,
    // unvalidated) or during it (validation finishes, its line is written, the run stops before epoch 2).
    const epochEnd = new RegExp(`^epoch 1 batch ${BATCHES}/${BATCHES}`, 'm');
    const third = await frost(resumeArgs, { signal: 'SIGINT', when: epochEnd, runDir });
    assert.equal(third.code, 130, third.stderr);
    assert.match(third.stderr, new RegExp(`resumed at epoch ${at2.epoch}, batch ${at2.batch}, step ${at2.step}`));
    const at3 = interruptedLine(third.stderr, 'SIGINT', runDir);
    const validated = at3.epoch === 2;
    t.diagnostic(`the signal at the end of epoch 1 came ${validated ? 'during' : 'before'} its validation`);
    assert.deepEqual([at3.batch, at3.step], [validated ? 0 : BATCHES, BATCHES]);
    assert.deepEqual(
      (await metricsLines(runDir)).map((l) => l.step),
      validated ? [BATCHES] : [],
    );

    // The last session is not stopped: the same command in this process finishes it.
    const fourth = await frostInProcess(resumeArgs);
    assert.equal(fourth.code, 0, fourth.stderr);

    const lastOf = (run: string) => readFile(join(run, 'checkpoints', 'last', 'tensors.bin'));
    assert.ok((await lastOf(runDir)).equals(await lastOf(reference)), 'the same parameters and Adam moments');
    assert.equal((await readCheckpointInfo(runDir, 'last'))?.step, 2 * BATCHES);
    const got = await metricsLines(runDir);
    const want = await metricsLines(reference);
    assert.equal(got.length, 2, 'one line an epoch, none duplicated');
    // Timing fields differ, and an epoch's train loss and tokens cover the session that finished it.
    const same = ({ epoch, step, valBleu, valScores, learningRate, best, complete }: Record<string, unknown>) => ({
      ...{ epoch, step, valBleu, valScores, learningRate, best, complete },
    });
    assert.deepEqual(got.map(same), want.map(same));
    assert.deepEqual([got[1]!.trainLoss, got[1]!.tokens], [want[1]!.trainLoss, want[1]!.tokens]);
    if (!validated) assert.deepEqual([got[0]!.tokens, got[0]!.trainLoss], [0, null], 'no update left to report');
    assert.ok((got[0]!.tokens as number) < (want[0]!.tokens as number));
  });

  test('a language model stopped at a window resumes there and keeps its best validation', async () => {
    const runDir = join(dir, 'lm');
    // 5000 tokens in 20 streams of 5-token windows: an epoch of 50 updates.
    const args = ['train', '--task', 'lm', '--preset', 'tiny', '--data', lmDataDir, '--bptt', '5'];
    args.push('--epochs', '1', '--backend', 'wasm', '--out', runDir);
    // SIGHUP here (a closed terminal), which the same watch handles as SIGINT and SIGTERM: exit 128 + 1.
    const stopped = await frost(args, { signal: 'SIGHUP', when: /^epoch 1 batch \d+\//m, runDir });
    assert.equal(stopped.code, 129, stopped.stderr);
    const m = /^frost: interrupted by SIGHUP at epoch 1, window (\d+), step (\d+): saved/m.exec(stopped.stderr);
    assert.ok(m && m[1] === m[2] && Number(m[1]) > 0 && Number(m[1]) < 50, stopped.stderr);

    const resumed = await frostInProcess(['train', '--resume', runDir, '--backend', 'wasm']);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stderr, new RegExp(`resumed at epoch 1, window ${m[1]}, step ${m[1]}`));
    // Saved before any validation, its best-so-far (Infinity, null in JSON) must not come back as 0.
    const val = /val ppl (\d+\.\d\d) \(best\)/.exec(resumed.stderr);
    assert.ok(val, resumed.stderr);
    assert.match(resumed.stderr, new RegExp(`best val perplexity ${val[1]}$`, 'm'));
  });

  test('a second signal ends the process at once; once the loop is done, signals are fatal again', async () => {
    // In a child of its own: the watch exits the process. Two kill()s back to back would merge into one
    // pending signal, so the second is sent once the first has been noted. The three children run at once:
    // each is mostly tsx starting up.
    const twiceRun = script(`
      const watch = new InterruptWatch();
      watch.start();
      process.kill(process.pid, 'SIGINT');
      while (!watch.signal) await new Promise((r) => setImmediate(r));
      process.stdout.write('noted ' + watch.signal + '\\n');
      process.kill(process.pid, 'SIGINT');
      await new Promise((r) => setTimeout(r, 10_000));
      process.stdout.write('still running\\n');`);

    // Under frost experiment, which forwards its signals, the copy a terminal sends the whole process group
    // and the forwarded one are one stop: the trainer goes on saving (the experiment escalates by itself).
    const forwardedRun = script(
      `
      const watch = new InterruptWatch();
      watch.start();
      process.kill(process.pid, 'SIGINT');
      while (!watch.signal) await new Promise((r) => setImmediate(r));
      process.kill(process.pid, 'SIGINT');
      await new Promise((r) => setTimeout(r, 300));
      process.stdout.write('still saving\\n');`,
      { FROST_SIGNALS_FORWARDED: String(process.pid) },
    );

    const afterRun = script(`
      const watch = new InterruptWatch();
      watch.start();
      watch.stop();
      process.kill(process.pid, 'SIGTERM');
      await new Promise((r) => setTimeout(r, 10_000));
      process.stdout.write('still running\\n');`);

    const twice = await twiceRun;
    assert.deepEqual([twice.code, twice.stdout], [130, 'noted SIGINT\n'], twice.stderr);
    assert.match(twice.stderr, /^frost: SIGINT: saving where the run is; send it again to stop at once/m);
    assert.match(twice.stderr, /^frost: second SIGINT: stopped at once, without saving$/m);
    const forwarded = await forwardedRun;
    assert.deepEqual([forwarded.code, forwarded.stdout], [0, 'still saving\n'], forwarded.stderr);
    assert.match(forwarded.stderr, /^frost: SIGINT again: already saving/m);
    const after = await afterRun;
    assert.deepEqual([after.code, after.signal, after.stdout], [null, 'SIGTERM', '']);
  });
});

/** Runs an ES module body with `InterruptWatch` imported, in a child process. */
function script(
  body: string,
  env: Record<string, string> = {},
): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  const source = `import { InterruptWatch } from ${JSON.stringify(fileURLToPath(new URL('../train/interrupt.ts', import.meta.url)))};\n${body}`;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', source], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}
