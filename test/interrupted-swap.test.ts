/**
 * core/interrupted-swap.ts: what a folder swap killed at each point leaves is finished, rolled back or removed,
 * and what a live writer is writing is left alone (issue #51, attack items 2 and 6). The folders are made by
 * hand, as each kill point leaves them; test/export-durable.test.ts kills real exports.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { recoverSwap, swappedNames, writerRuns } from '../core/interrupted-swap.ts';

let root: string;
/** A pid that no process has: a dead writer's. */
let deadPid: number;

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-swap-'));
  const child = spawn(process.execPath, ['-e', '0']);
  await new Promise((done) => child.on('close', done));
  deadPid = child.pid!;
});

after(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A folder holding one file, `version`, that says which version it is. */
async function version(dir: string, text: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'version'), text);
}
const versionOf = (dir: string) => readFile(join(dir, 'version'), 'utf8');

describe('recoverSwap', () => {
  test('killed between the two renames: the swap is finished and says so', async () => {
    const parent = join(root, 'between');
    const target = join(parent, 'mt');
    await version(`${target}.old-${deadPid}`, 'previous');
    await version(`${target}.tmp-${deadPid}`, 'new');
    const done = recoverSwap(target);
    assert.equal(done.length, 2, done.join('\n'));
    assert.match(
      done[0]!,
      new RegExp(`^finished the interrupted swap of .*mt: moved in the new version from mt\\.tmp-${deadPid}$`),
    );
    assert.match(done[1]!, new RegExp(`^removed .*mt\\.old-${deadPid}, left by an interrupted write$`));
    assert.equal(await versionOf(target), 'new');
    assert.deepEqual(readdirSync(parent), ['mt']);
  });

  test('only the previous version left under its temporary name: rolled back', async () => {
    const target = join(root, 'old-only', 'mt');
    await version(`${target}.old-${deadPid}`, 'previous');
    const done = recoverSwap(target);
    assert.match(done.join('\n'), /^rolled back the interrupted swap of .*mt: restored the previous version/);
    assert.equal(await versionOf(target), 'previous');
  });

  test('killed while writing, or after the swap: the leftovers go, the folder is untouched', async () => {
    const parent = join(root, 'written');
    const target = join(parent, 'mt');
    await version(target, 'current');
    await version(`${target}.tmp-${deadPid}`, 'partial');
    await version(`${target}.old-${deadPid}`, 'replaced');
    const done = recoverSwap(target);
    assert.equal(done.length, 2, done.join('\n'));
    assert.ok(done.every((l) => l.startsWith('removed ')));
    assert.equal(await versionOf(target), 'current');
    assert.deepEqual(readdirSync(parent), ['mt']);
  });

  test("a live writer's temporary folder is its work in progress: left alone, even with the folder missing", async () => {
    const parent = join(root, 'live');
    const target = join(parent, 'mt');
    const writer = spawn('sleep', ['30']);
    try {
      assert.ok(writerRuns(writer.pid!));
      // The writer between its two renames: the folder is missing, both versions are its own.
      await version(`${target}.old-${writer.pid}`, 'previous');
      await version(`${target}.tmp-${writer.pid}`, 'new');
      const done = recoverSwap(target);
      assert.equal(done.length, 2);
      assert.ok(
        done.every((l) => l.includes(`alone: pid ${writer.pid}, which is writing it, still runs`)),
        done[0],
      );
      assert.deepEqual(readdirSync(parent).sort(), [`mt.old-${writer.pid}`, `mt.tmp-${writer.pid}`]);
    } finally {
      writer.kill('SIGKILL');
    }
  });

  test('nothing left: nothing done; this process and a gone pid are no live writers', async () => {
    const target = join(root, 'clean', 'mt');
    await version(target, 'current');
    assert.deepEqual(recoverSwap(target), []);
    assert.deepEqual(recoverSwap(join(root, 'no-such-parent', 'mt')), []);
    assert.equal(writerRuns(process.pid), false);
    assert.equal(writerRuns(deadPid), false);
  });

  test('swappedNames: the folders of a models folder that have leftovers, once each', async () => {
    const parent = join(root, 'names');
    await version(join(parent, 'a'), '1');
    await version(join(parent, `a.tmp-${deadPid}`), '2');
    await version(join(parent, `b.old-${deadPid}`), '1');
    await version(join(parent, `b.tmp-${deadPid}`), '2');
    await version(join(parent, 'c.tmp-x'), 'not a pid');
    assert.deepEqual(swappedNames(parent), ['a', 'b']);
  });
});
