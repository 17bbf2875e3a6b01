/**
 * Issue #39 items 4 and 5, training: `frost train` killed with -9 at chosen points (the test hook
 * FROST_TEST_KILL_AT of train/atomic-write.ts sends the SIGKILL itself, at an exact point) resumes from
 * the newest complete checkpoint, under whatever name the kill left it, and says which; with none it is
 * refused rather than started again from zero; `--checkpoint-minutes` sets how often `last` is saved. A
 * checkpoint save on a full disk names the file that failed and leaves no partial files. The killed trainers
 * are child processes; what resumes after them is the same `frost train` command run in this process.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadCheckpoint, saveCheckpoint } from '../train/checkpoint.ts';
import { readCheckpointInfo } from '../train/run-folder.ts';
import { startFrost, tinyTrainArgs } from './helpers/frost-cli.ts';
import { frostInProcess } from './helpers/frost-in-process.ts';
import { writeToyData } from './helpers/toy-run.ts';
import { smallDisk } from './helpers/small-disk.ts';

let dir: string;
let dataDir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'frost-durable-train-'));
  dataDir = await writeToyData(join(dir, 'toy'), { seed: 1, train: 600, val: 16, test: 4 });
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const trainArgs = (runDir: string, extra: string[] = []) =>
  tinyTrainArgs(dataDir, runDir, ['--keep-last', '0', ...extra]);

const run = (args: string[], env: Record<string, string> = {}) => startFrost(args, env).exited;
const checkpointNames = (runDir: string) => readdirSync(join(runDir, 'checkpoints')).sort();

describe('frost train killed with -9', { timeout: 180_000 }, () => {
  test('between the two renames of a periodic save: --resume takes the newest complete checkpoint and names it', async () => {
    const runDir = join(dir, 'swap');
    // A save of `last` every 12 ms; the kill comes in the first one that replaces an existing `last`.
    const killed = await run(trainArgs(runDir, ['--checkpoint-minutes', '0.0002']), {
      FROST_TEST_KILL_AT: 'swap:last:1',
    });
    assert.equal(killed.signal, 'SIGKILL', killed.stderr);
    const left = checkpointNames(runDir);
    assert.ok(!left.includes('last'), `no checkpoints/last: ${left.join(', ')}`);
    const tmp = left.find((n) => /^last\.tmp-\d+$/.test(n));
    assert.ok(tmp && left.some((n) => /^last\.old-\d+$/.test(n)), left.join(', '));
    const newest = JSON.parse(await readFile(join(runDir, 'checkpoints', tmp, 'checkpoint.json'), 'utf8')) as {
      state: { step: number; batch: number };
    };
    assert.ok(newest.state.step > 0);

    const resumed = await frostInProcess([
      'train',
      '--resume',
      runDir,
      '--max-updates',
      String(newest.state.step + 2),
      '--backend',
      'wasm',
    ]);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(
      resumed.stderr,
      new RegExp(
        `^resumed at epoch 1, batch ${newest.state.batch}, step ${newest.state.step} \\(from checkpoints/${tmp}\\); removed what interrupted saves left: checkpoints/last\\.old-\\d+$`,
        'm',
      ),
    );
    assert.deepEqual(checkpointNames(runDir), ['best', 'last'], 'the leftovers are gone');
    assert.equal((await readCheckpointInfo(runDir, 'last'))?.step, newest.state.step + 2);
  });

  test('before its first checkpoint was whole: --resume is refused, naming the run folder, and the partial save is removed', async () => {
    const runDir = join(dir, 'first');
    const killed = await run(trainArgs(runDir, ['--checkpoint-minutes', '0.0002']), {
      FROST_TEST_KILL_AT: 'file:tensors.bin:1',
    });
    assert.equal(killed.signal, 'SIGKILL', killed.stderr);
    assert.deepEqual(
      checkpointNames(runDir).map((n) => n.replace(/\d+$/, 'PID')),
      ['last.tmp-PID'],
    );
    const config = await readFile(join(runDir, 'config.json'), 'utf8');
    const refused = await frostInProcess(['train', '--resume', runDir, '--epochs', '3', '--backend', 'wasm']);
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(refused.stderr, new RegExp(`^frost: ${runDir} holds no complete checkpoint to resume from`, 'm'));
    assert.doesNotMatch(refused.stderr, /^epoch 1 batch/m, 'nothing was trained');
    assert.deepEqual(checkpointNames(runDir), []);
    assert.equal(await readFile(join(runDir, 'config.json'), 'utf8'), config, 'the config is left as it was');
  });
});

describe('a checkpoint save on a full disk', () => {
  const disk = smallDisk(() => dir);

  test('names the file that failed, removes its partial files, and keeps the previous checkpoint', async (t) => {
    if (disk.skipped(t)) return;
    const mnt = disk.path;
    const ckpt = join(mnt, 'checkpoints', 'best');
    await mkdir(join(mnt, 'checkpoints'));
    await saveCheckpoint(ckpt, [{ name: 'w', shape: [4], data: Float32Array.from([1, 2, 3, 4]) }], { step: 1 });
    // 6 MB of tensors on a 5 MB disk.
    const big = [{ name: 'w', shape: [1_500_000], data: new Float32Array(1_500_000) }];
    await assert.rejects(saveCheckpoint(ckpt, big, { step: 2 }), (err: Error) => {
      assert.match(
        err.message,
        new RegExp(
          `^cannot write ${ckpt}\\.tmp-${process.pid}/tensors\\.bin: ENOSPC: no space left on device, write; ${ckpt} is unchanged and ${ckpt}\\.tmp-${process.pid} was removed$`,
        ),
      );
      return true;
    });
    assert.deepEqual(readdirSync(join(mnt, 'checkpoints')), ['best'], 'no partial files keep the disk full');
    const kept = await loadCheckpoint(ckpt);
    assert.deepEqual([...kept.tensors.get('w')!.data], [1, 2, 3, 4]);
    // The space is free again: 4 MB fit.
    await writeFile(join(mnt, 'probe'), new Uint8Array(4 * 1024 * 1024));
    assert.ok(existsSync(join(mnt, 'probe')));
  });
});
