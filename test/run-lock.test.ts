/**
 * The run folder lock (train/run-lock.ts): one trainer per run folder. In-process: taking, refusing,
 * releasing, and taking over stale locks (a dead pid, a reused pid, an unwritten file). Through the CLI: while
 * a `frost train` child trains a folder (and is then stopped by SIGTERM), a second `frost train --resume` (or a
 * new run with the same --out) is refused with the folder and the trainer's pid and changes nothing there, and
 * a lock left by a dead trainer is taken over so the run still resumes; those commands run in this process
 * (helpers/frost-in-process.ts), as the CLI registers them.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { readCheckpointInfo } from '../train/run-folder.ts';
import { lockRunFolder, readRunLock, RunFolderLocked, runLockPath, type RunLockHolder } from '../train/run-lock.ts';
import { processAlive, startFrost } from './helpers/frost-cli.ts';
import { frostInProcess as frost } from './helpers/frost-in-process.ts';
import { writeToyData } from './helpers/toy-run.ts';

let dir: string;
let n = 0;
const newFolder = async () => {
  const runDir = join(dir, `run-${n++}`);
  await mkdir(runDir, { recursive: true });
  return runDir;
};

/** A pid that no process has now: a child's, once it has exited. */
function deadPid(): number {
  const { pid } = spawnSync(process.execPath, ['-e', '']);
  assert.ok(pid !== undefined && !processAlive(pid));
  return pid;
}

const holder = (extra: Partial<RunLockHolder>): RunLockHolder => ({
  pid: process.pid,
  host: hostname(),
  startedAt: '2026-01-01T00:00:00.000Z',
  command: 'frost train --resume x',
  ...extra,
});

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'frost-lock-'));
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('the run folder lock', () => {
  test('is taken, refused to a second taker with the folder and pid, and released', async () => {
    const runDir = await newFolder();
    const lock = lockRunFolder(runDir, () => assert.fail('no warning'));
    const held = readRunLock(runDir);
    assert.ok(held !== null && held !== 'malformed');
    assert.deepEqual([held.pid, held.host], [process.pid, hostname()]);
    assert.throws(
      () => lockRunFolder(runDir, () => undefined),
      (err: Error) =>
        err instanceof RunFolderLocked &&
        err.message.startsWith(`${runDir} is being trained by pid ${process.pid} since ${held.startedAt}`) &&
        err.message.includes(`delete ${runLockPath(runDir)}`),
    );
    lock.release();
    assert.ok(!existsSync(runLockPath(runDir)));
    lock.release();
    lockRunFolder(runDir, () => undefined).release();
  });

  test('a lock whose process is gone is taken over with a warning; a live or foreign one is not', async () => {
    const runDir = await newFolder();
    const dead = deadPid();
    await writeFile(runLockPath(runDir), JSON.stringify(holder({ pid: dead })));
    const warnings: string[] = [];
    const lock = lockRunFolder(runDir, (line) => warnings.push(line));
    assert.equal(warnings.length, 1);
    assert.match(
      warnings[0]!,
      new RegExp(`taking over the lock of pid ${dead} \\(started 2026-01-01T00:00:00.000Z\\)`),
    );
    // Whether the run resumes, and from where, is the trainer's to say (issue #51, 8: it promised a checkpoint).
    assert.doesNotMatch(warnings[0]!, /resumed|checkpoint/);
    assert.equal((readRunLock(runDir) as RunLockHolder).pid, process.pid);
    lock.release();

    // A lock from another host says nothing about this one's processes: refused, naming the host.
    await writeFile(runLockPath(runDir), JSON.stringify(holder({ pid: dead, host: 'elsewhere' })));
    assert.throws(() => lockRunFolder(runDir, () => undefined), new RegExp(`by pid ${dead} on host elsewhere`));

    // Its pid reused by a process that started at another time (Linux: /proc/PID/stat) counts as gone.
    if (existsSync('/proc/self/stat')) {
      await writeFile(runLockPath(runDir), JSON.stringify(holder({ procStart: '1' })));
      lockRunFolder(runDir, (line) => warnings.push(line)).release();
      assert.match(warnings.at(-1)!, new RegExp(`taking over the lock of pid ${process.pid}`));
    }
  });

  test(
    'a holder that has exited but is not yet reaped (a zombie) counts as gone',
    { skip: !existsSync('/proc/self/stat') },
    async () => {
      // sh starts a child, then becomes `sleep`, which never reaps it: a zombie once it exits, for 10 s. The child
      // outlives the exec, or sh itself may reap it first (as it did once on a loaded machine: no /proc entry).
      const parent = spawn('sh', ['-c', 'sleep 0.5 & echo $!; exec sleep 10'], { stdio: ['ignore', 'pipe', 'ignore'] });
      try {
        const zombie = Number((await once(parent.stdout, 'data'))[0].toString());
        const stat = () => readFileSync(`/proc/${zombie}/stat`, 'utf8').split(') ')[1]!.split(' ');
        for (let i = 0; i < 250 && stat()[0] !== 'Z'; i++) await sleep(20);
        assert.equal(stat()[0], 'Z');
        assert.ok(processAlive(zombie), 'kill(pid, 0) still finds a zombie');
        const runDir = await newFolder();
        await writeFile(runLockPath(runDir), JSON.stringify(holder({ pid: zombie, procStart: stat()[19] })));
        const warnings: string[] = [];
        lockRunFolder(runDir, (line) => warnings.push(line)).release();
        assert.match(warnings[0] ?? '', new RegExp(`taking over the lock of pid ${zombie}`));
      } finally {
        parent.kill();
      }
    },
  );

  test('trainers that find the same stale lock at once: one takes it over, the others are refused naming it', async () => {
    const runDir = await newFolder();
    const dead = deadPid();
    await writeFile(runLockPath(runDir), JSON.stringify(holder({ pid: dead })));
    // Each finds the lock stale, then pauses there (the test hook), so that all have judged it before any removes it.
    const source = `import { lockRunFolder } from ${JSON.stringify(fileURLToPath(new URL('../train/run-lock.ts', import.meta.url)))};
      try {
        const lock = lockRunFolder(${JSON.stringify(runDir)}, () => undefined);
        process.stdout.write('won ' + process.pid);
        await new Promise((r) => setTimeout(r, 1500));
        lock.release();
      } catch (err) {
        process.stdout.write('refused ' + err.message);
      }`;
    const contenders = Array.from({ length: 4 }, () => {
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', source], {
        env: { ...process.env, FROST_TEST_PAUSE_AT: 'lock-takeover:700' },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      return new Promise<string>((done) => child.on('close', () => done(out)));
    });
    const outcomes = await Promise.all(contenders);
    const winners = outcomes.filter((o) => o.startsWith('won '));
    assert.equal(winners.length, 1, outcomes.join('\n'));
    const winner = winners[0]!.slice('won '.length);
    for (const o of outcomes.filter((o) => !o.startsWith('won ')))
      assert.match(o, new RegExp(`^refused .* is being trained by pid ${winner} since`), outcomes.join('\n'));
    assert.ok(!existsSync(runLockPath(runDir)), 'the winner released its lock');
    assert.ok(!existsSync(`${runLockPath(runDir)}.takeover`), 'no takeover marker is left');
  });

  test('an unreadable lock is refused while it may be being written, taken over once it is old', async () => {
    const runDir = await newFolder();
    await writeFile(runLockPath(runDir), '');
    assert.throws(() => lockRunFolder(runDir, () => undefined), /its lock .* is being written/);
    const old = new Date(Date.now() - 60_000);
    await utimes(runLockPath(runDir), old, old);
    const warnings: string[] = [];
    lockRunFolder(runDir, (line) => warnings.push(line)).release();
    assert.match(warnings[0]!, /taking over an unreadable lock/);
  });

  test('release leaves a lock that is no longer its own', async () => {
    const runDir = await newFolder();
    const lock = lockRunFolder(runDir, () => undefined);
    const other = JSON.stringify(holder({ startedAt: '2026-02-02T00:00:00.000Z' }));
    await writeFile(runLockPath(runDir), other);
    lock.release();
    assert.equal(await readFile(runLockPath(runDir), 'utf8'), other);
  });

  test('a signal outside training ends the process as usual, less the lock; so does process.exit', async () => {
    const runDir = await newFolder();
    const source = `import { lockRunFolder } from ${JSON.stringify(fileURLToPath(new URL('../train/run-lock.ts', import.meta.url)))};
      lockRunFolder(${JSON.stringify(runDir)}, () => undefined);
      if (process.argv.includes('exit')) process.exit(3);
      process.kill(process.pid, 'SIGTERM');
      await new Promise((r) => setTimeout(r, 10_000));`;
    for (const [how, code] of [
      ['signal', 143],
      ['exit', 3],
    ] as const) {
      const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', source, how]);
      const exit = await new Promise<number | null>((done) => child.on('close', done));
      assert.equal(exit, code, how);
      assert.ok(!existsSync(runLockPath(runDir)), `${how}: the lock is gone`);
    }
  });
});

describe('frost train and the lock', { timeout: 180_000 }, () => {
  test('a second trainer on a folder being trained is refused and changes nothing; a dead one is taken over', async () => {
    const dataDir = await writeToyData(join(dir, 'toy'), { seed: 1, train: 200, val: 16, test: 4 });
    const runDir = join(dir, 'cli-run');
    const common = ['--preset', 'tiny', '--batch-size', '4', '--val-sentences', '16', '--backend', 'wasm'];
    // Far more epochs than the test lasts: it is stopped by the test.
    const first = startFrost(['train', '--data', dataDir, '--epochs', '100', ...common, '--out', runDir]);
    // Its first progress line comes after its first update.
    while (!/^epoch 1 batch \d+\//m.test(first.stderr())) {
      assert.equal(first.child.exitCode, null, first.stderr());
      await new Promise((r) => setTimeout(r, 50));
    }
    const pid = first.child.pid!;
    assert.equal((readRunLock(runDir) as RunLockHolder).pid, pid);
    const config = await readFile(join(runDir, 'config.json'), 'utf8');

    const refused = `${runDir} is being trained by pid ${pid}`;
    const resumed = await frost(['train', '--resume', runDir, '--max-updates', '5', '--backend', 'wasm']);
    assert.equal(resumed.code, 1, resumed.stderr);
    assert.ok(resumed.stderr.includes(refused), resumed.stderr);
    const again = await frost(['train', '--data', dataDir, '--epochs', '2', ...common, '--out', runDir]);
    assert.equal(again.code, 1, again.stderr);
    assert.ok(again.stderr.includes(refused), again.stderr);
    assert.equal(
      await readFile(join(runDir, 'config.json'), 'utf8'),
      config,
      'the refused --max-updates is not written',
    );
    assert.equal(first.child.exitCode, null, 'the first trainer goes on');

    first.child.kill('SIGTERM');
    const stopped = await first.exited;
    assert.equal(stopped.code, 143, stopped.stderr);
    const at = /interrupted by SIGTERM at epoch (\d+), batch (\d+), step (\d+): saved/.exec(stopped.stderr);
    assert.ok(at, stopped.stderr);
    assert.ok(!existsSync(runLockPath(runDir)));
    const saved = (await readCheckpointInfo(runDir, 'last'))!.step;
    assert.equal(saved, Number(at[3]));

    // As if the trainer had been killed with SIGKILL: its lock is left, its pid gone.
    const dead = deadPid();
    await writeFile(runLockPath(runDir), JSON.stringify(holder({ pid: dead, command: 'frost train' })));
    const taken = await frost(['train', '--resume', runDir, '--max-updates', String(saved + 3), '--backend', 'wasm']);
    assert.equal(taken.code, 0, taken.stderr);
    assert.match(taken.stderr, new RegExp(`^frost: warning: ${runDir}: taking over the lock of pid ${dead}`, 'm'));
    assert.match(taken.stderr, new RegExp(`resumed at epoch ${at[1]}, batch ${at[2]}, step ${saved}`));
    assert.equal((await readCheckpointInfo(runDir, 'last'))?.step, saved + 3);
    assert.ok(!existsSync(runLockPath(runDir)), 'released at the end');
  });
});
