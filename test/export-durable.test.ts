/**
 * Issue #39 items 3 and 5, export: `frost export --out` over a model killed with -9 part-way (the test
 * hook FROST_TEST_KILL_AT of train/atomic-write.ts sends the SIGKILL at an exact point) leaves the
 * previous model whole, and the next export cleans up or puts back what the kill left; an export on a
 * full disk names the file that failed, leaves no partial files, and keeps the previous model. The killed
 * exports are child processes; the exports after them are the same `frost export` command run in this
 * process, and each previous model is a copy of a cached export (toy-fixtures.ts).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, lstatSync, readdirSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { exportRun } from '../export/export-run.ts';
import { startServer } from '../serve/server.ts';
import { initBackend } from '../train/backend/select.ts';
import { copyFixture } from './helpers/cached-fixture.ts';
import { startFrost } from './helpers/frost-cli.ts';
import { frostInProcess } from './helpers/frost-in-process.ts';
import { smallDisk } from './helpers/small-disk.ts';
import { cachedToyModel } from './helpers/toy-fixtures.ts';
import { RNN_ATTN_FIXED_UNIFORM_SHORT } from './helpers/toy-specs.ts';

let dir: string;
/** A trained run (shared, read-only: exports only read it) and an export of it. */
let runDir: string;
let modelDir: string;

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = await mkdtemp(join(tmpdir(), 'frost-durable-export-'));
  // Any trained model will do: these tests are about the files an export writes, not what they hold.
  ({ runDir, modelDir } = await cachedToyModel(RNN_ATTN_FIXED_UNIFORM_SHORT, { name: 'served' }));
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Every file of a model folder, by name. */
async function filesOf(modelDir: string): Promise<Record<string, Buffer>> {
  const names = readdirSync(modelDir).sort();
  return Object.fromEntries(await Promise.all(names.map(async (n) => [n, await readFile(join(modelDir, n))] as const)));
}

const exportArgs = (outDir: string) => ['export', runDir, '--out', outDir, '--name', 'served'];
const exportCli = (outDir: string, env: Record<string, string> = {}) => startFrost(exportArgs(outDir), env).exited;
/** A previous model at `outDir`, as an earlier export named `served` left it. */
const previousModel = (outDir: string) => copyFixture(modelDir, outDir);

describe('frost export killed with -9 over a served model', { timeout: 400_000 }, () => {
  test('half-way through writing: the previous model is whole, and the next export finishes', async () => {
    const served = join(dir, 'models', 'served');
    await previousModel(served);
    const before = await filesOf(served);
    const killed = await exportCli(served, { FROST_TEST_KILL_AT: 'file:decoder.onnx:1' });
    assert.equal(killed.signal, 'SIGKILL', killed.stderr);
    assert.deepEqual(await filesOf(served), before, 'the previous model, every file of it');
    assert.ok(readdirSync(join(dir, 'models')).some((n) => /^served\.tmp-\d+$/.test(n)));

    const again = await frostInProcess(exportArgs(served));
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /^removed .*served\.tmp-\d+, left by an interrupted write$/m);
    assert.deepEqual(readdirSync(join(dir, 'models')), ['served'], 'no leftovers');
    assert.deepEqual(Object.keys(await filesOf(served)), Object.keys(before));
  });

  /** An export of `served` killed between the two renames of its swap: the folder gone, both versions beside it. */
  async function killedMidSwap(served: string): Promise<void> {
    await previousModel(served);
    const killed = await exportCli(served, { FROST_TEST_KILL_AT: 'swap:served:1' });
    assert.equal(killed.signal, 'SIGKILL', killed.stderr);
    const left = readdirSync(join(served, '..')).map((n) => n.replace(/\d+$/, 'PID'));
    assert.deepEqual(left.sort(), ['served.old-PID', 'served.tmp-PID']);
  }

  test('between the two renames of the swap: the next export finishes the swap first, and says so', async () => {
    const served = join(dir, 'swap', 'served');
    await killedMidSwap(served);
    const again = await frostInProcess(exportArgs(served));
    assert.equal(again.code, 0, again.stderr);
    assert.match(
      again.stderr,
      /^finished the interrupted swap of .*served: moved in the new version from served\.tmp-\d+$/m,
    );
    assert.match(again.stderr, /^removed .*served\.old-\d+, left by an interrupted write$/m);
    assert.deepEqual(readdirSync(join(dir, 'swap')), ['served']);
    assert.ok((await filesOf(served))['model-card.json']);
  });

  test('between the two renames of the swap: `frost serve` finishes the swap, says so, and serves the model', async () => {
    const models = join(dir, 'serve-after-swap');
    await killedMidSwap(join(models, 'served'));
    const logged: string[] = [];
    const server = await startServer({
      modelsDir: models,
      port: 0,
      intraOpNumThreads: 1,
      workers: 1,
      log: (line) => logged.push(line),
    });
    try {
      assert.ok(
        logged.some((l) => /finished the interrupted swap of .*served: moved in the new version/.test(l)),
        logged.join('\n'),
      );
      assert.deepEqual(readdirSync(models), ['served']);
      const list = (await (await fetch(`${server.url}/v1/models`)).json()) as { models: Array<{ name: string }> };
      assert.deepEqual(
        list.models.map((m) => m.name),
        ['served'],
      );
    } finally {
      await server.close();
    }
  });

  test("a second export to the same folder leaves the first one's work in progress alone", async () => {
    const served = join(dir, 'two-exports', 'served');
    await previousModel(served);
    // The first export, part-way: its temporary folder, named by its live pid.
    const first = spawn('sleep', ['60']);
    try {
      const inProgress = `${served}.tmp-${first.pid}`;
      await previousModel(inProgress);
      const second = await frostInProcess(exportArgs(served));
      assert.equal(second.code, 0, second.stderr);
      assert.match(
        second.stderr,
        new RegExp(`left .*served\\.tmp-${first.pid} alone: pid ${first.pid}, which is writing it, still runs`),
      );
      assert.ok((await filesOf(inProgress))['model-card.json'], 'the first export keeps its temporary folder');
      assert.ok((await filesOf(served))['model-card.json']);
    } finally {
      first.kill('SIGKILL');
    }
  });

  test('over a folder `frost serve --watch` serves: one reload, of the whole new model', async () => {
    const served = join(dir, 'watched', 'served');
    await previousModel(served);
    const reloads: boolean[] = [];
    const logged: string[] = [];
    const server = await startServer({
      modelsDir: served,
      port: 0,
      intraOpNumThreads: 1,
      workers: 1,
      watch: true,
      log: (line) => logged.push(line),
      onReload: (_name, ok) => reloads.push(ok),
    });
    try {
      await exportRun(runDir, served, { quiet: true, paritySentences: 2 });
      for (let i = 0; i < 500 && reloads.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      // Past the debounce again: a second change would have reloaded by now.
      await new Promise((r) => setTimeout(r, 1500));
      assert.deepEqual(reloads, [true], logged.join('\n'));
      assert.ok(!logged.some((l) => /refused/.test(l)), logged.join('\n'));
    } finally {
      await server.close();
    }
  });

  test('a link to a model folder is followed: its target is replaced, the link stays', async () => {
    const links = join(dir, 'links');
    await previousModel(join(links, 'v3'));
    await symlink('v3', join(links, 'current'));
    await exportRun(runDir, join(links, 'current'), { quiet: true, paritySentences: 2, name: 'current' });
    assert.ok(lstatSync(join(links, 'current')).isSymbolicLink());
    assert.deepEqual(readdirSync(links).sort(), ['current', 'v3']);
    const card = JSON.parse(await readFile(join(links, 'v3', 'model-card.json'), 'utf8')) as { name: string };
    assert.equal(card.name, 'current');
  });

  test('a folder that is not a model is refused, not replaced', async () => {
    const notModel = join(dir, 'home');
    await mkdir(notModel, { recursive: true });
    await writeFile(join(notModel, 'notes.txt'), 'mine');
    await assert.rejects(
      exportRun(runDir, notModel, { quiet: true, paritySentences: 2 }),
      /home holds notes\.txt, which is not part of an exported model/,
    );
    assert.equal(await readFile(join(notModel, 'notes.txt'), 'utf8'), 'mine');
  });
});

describe('frost export --checkpoint best after a save killed between its two renames (issue #51, 8)', () => {
  test('exports best from where the kill left it, says so, and the card claims its score', async () => {
    const run = await copyFixture(runDir, join(dir, 'best-left', 'run'));
    const best = JSON.parse(await readFile(join(run, 'checkpoints', 'best', 'checkpoint.json'), 'utf8')) as {
      state: { step: number; bestBleu: number };
    };
    await rename(join(run, 'checkpoints', 'best'), join(run, 'checkpoints', 'best.old-4242'));
    const out = join(dir, 'best-left', 'model');
    const exported = await frostInProcess(['export', run, '--out', out, '--checkpoint', 'best']);
    assert.equal(exported.code, 0, exported.stderr);
    assert.match(exported.stderr, /^exporting best from .*checkpoints\/best\.old-4242, where a save interrupted/m);
    const card = JSON.parse(await readFile(join(out, 'model-card.json'), 'utf8')) as {
      config: { checkpoint: { which: string; step: number } };
      metrics: { valBleu?: number };
    };
    assert.deepEqual(card.config.checkpoint.which, 'best');
    assert.equal(card.config.checkpoint.step, best.state.step);
    assert.equal(card.metrics.valBleu, best.state.bestBleu);
    assert.ok(existsSync(join(run, 'checkpoints', 'best.old-4242')), 'the run folder is read, not tidied');
  });
});

describe('frost export --out onto a mount point (a container volume; issue #51, 8)', () => {
  const volume = smallDisk(() => dir, 'volume', '64m');

  test('writes the model into it file by file, card last, and replaces a previous one the same way', async (t) => {
    if (volume.skipped(t)) return;
    const first = await frostInProcess(exportArgs(volume.path));
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stderr, /is a mount point, which cannot be swapped whole: its files were replaced one by one/);
    const exported = await filesOf(volume.path);
    assert.ok(exported['model-card.json'] && exported['decoder.onnx']);
    // A file of an older model that the new one does not have goes; the new model's files are all there.
    await writeFile(join(volume.path, 'old-graph.onnx'), 'stale');
    const again = await frostInProcess(exportArgs(volume.path));
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(readdirSync(volume.path).sort(), Object.keys(exported).sort(), 'no leftovers, no stale file');
    // The same files as an export into an ordinary folder.
    assert.deepEqual(Object.keys(exported).sort(), Object.keys(await filesOf(modelDir)).sort());
  });
});

describe('frost export on a full disk', () => {
  const disk = smallDisk(() => dir);

  test('names the file that failed, leaves no partial files, and keeps the previous model', async (t) => {
    if (disk.skipped(t)) return;
    const mnt = disk.path;
    const served = join(mnt, 'served');
    await cp(join(dir, 'models', 'served'), served, { recursive: true });
    const before = await filesOf(served);
    const modelBytes = Object.values(before).reduce((n, b) => n + b.length, 0);
    // Fill the disk but for half a model.
    const free = Number(execFileSync('df', ['--output=avail', '-B1', mnt]).toString().trim().split('\n')[1]);
    await writeFile(join(mnt, 'filler'), new Uint8Array(Math.max(0, free - Math.floor(modelBytes / 2))));
    await assert.rejects(exportRun(runDir, served, { quiet: true, paritySentences: 2 }), (err: Error) => {
      assert.match(
        err.message,
        new RegExp(
          `^cannot write ${served}\\.tmp-${process.pid}/[\\w.-]+: ENOSPC: no space left on device, write; ${served} is unchanged and ${served}\\.tmp-${process.pid} was removed$`,
        ),
      );
      return true;
    });
    assert.deepEqual(readdirSync(mnt).sort(), ['filler', 'served'], 'no partial files keep the disk full');
    assert.deepEqual(await filesOf(served), before);
  });
});
