import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import { resolveArchConfig } from '../models/index.ts';
import { cachedJson } from '../report/cache.ts';
import { parsePair } from '../experiments/data-sources.ts';
import { gridRuns, threadsPerRun, trainGrid } from '../experiments/grid.ts';
import { exportCandidates } from '../report/find-export.ts';
import { runStatus } from '../report/run-status.ts';
import { translationConfigSchema, writeRunConfig } from '../train/run-config.ts';
import { dropLostMetrics } from '../train/metrics-log.ts';
import { lockRunFolder } from '../train/run-lock.ts';

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'frost-experiment-status-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A run folder as the trainer leaves it: config, optional `last` checkpoint manifest, metrics lines. */
async function fakeRun(
  name: string,
  opts: {
    state?: Record<string, unknown>;
    metrics?: object[];
    head?: string;
    budget?: { maxMinutes?: number; epochs?: number };
  } = {},
): Promise<string> {
  const runDir = join(dir, name);
  await mkdir(runDir, { recursive: true });
  const config = translationConfigSchema.parse({
    arch: 'rnn-attn',
    preset: 'tiny',
    archConfig: resolveArchConfig('rnn-attn', 'tiny'),
    head: { name: opts.head ?? 'learned' },
    seed: 1,
    data: { dir: '/nowhere', kind: 'plain', src: 'src', tgt: 'tgt' },
    ...opts.budget,
  });
  await writeRunConfig(runDir, config);
  if (opts.state) {
    await mkdir(join(runDir, 'checkpoints', 'last'), { recursive: true });
    await writeFile(
      join(runDir, 'checkpoints', 'last', 'checkpoint.json'),
      JSON.stringify({ format: 'frost-checkpoint', sha256: 'ab'.repeat(32), state: opts.state }),
    );
  }
  if (opts.metrics)
    await writeFile(join(runDir, 'metrics.jsonl'), opts.metrics.map((m) => `${JSON.stringify(m)}\n`).join(''));
  return runDir;
}

const line = (elapsedMinutes: number, complete: boolean) => ({
  epoch: 1,
  step: 10,
  elapsedMinutes,
  complete,
  valBleu: 1,
});

/** A one-minute grid of the tiny rnn-attn over a corpus that is not there: its trainers fail as soon as they start. */
const toyGrid = (out: string, heads: string[], log: (line: string) => void) => ({
  out,
  dataDir: '/nowhere',
  arch: 'rnn-attn',
  preset: 'tiny',
  seed: 1,
  budgetMinutes: 1,
  pairs: [{ src: 'src', tgt: 'tgt' }],
  heads,
  log,
});

describe('which runs of a grid are finished', () => {
  test('no config: missing; a config without progress: unfinished at 0 minutes', async () => {
    assert.deepEqual(await runStatus(join(dir, 'absent'), 20), { kind: 'missing' });
    assert.deepEqual(await runStatus(await fakeRun('fresh'), 20), { kind: 'unfinished', elapsedMinutes: 0 });
  });

  test('the budget used (to rounding) is finished; less is not, even after a complete epoch', async () => {
    const used = await runStatus(await fakeRun('used', { metrics: [line(7, true), line(19.999, false)] }), 20);
    assert.equal(used.kind, 'finished');
    // A run killed after a complete epoch at minute 7 still has 13 minutes to train.
    assert.deepEqual(await runStatus(await fakeRun('killed', { metrics: [line(7, true)] }), 20), {
      kind: 'unfinished',
      elapsedMinutes: 7,
    });
    assert.equal((await runStatus(await fakeRun('short', { metrics: [line(19.5, false)] }), 20)).kind, 'unfinished');
  });

  test("the trainer's own verdict: a plateau stop is final, a time stop is extended by a larger budget", async () => {
    const plateau = await fakeRun('plateau', {
      state: { done: true, stopKind: 'plateau', stopReason: 'no validation gain for 20 epochs', elapsedMs: 5 * 60_000 },
    });
    assert.deepEqual(await runStatus(plateau, 20), {
      kind: 'finished',
      elapsedMinutes: 5,
      reason: 'no validation gain for 20 epochs',
    });
    const timed = await fakeRun('timed', {
      state: { done: true, stopKind: 'time', elapsedMs: 20 * 60_000 },
      metrics: [line(20, false)],
    });
    assert.equal((await runStatus(timed, 20)).kind, 'finished');
    assert.deepEqual(await runStatus(timed, 30), { kind: 'unfinished', elapsedMinutes: 20 });
  });

  test('epoch grids: the cap reached (complete epochs of `last`) is finished; a larger cap resumes; the stopping rule is final', async () => {
    const capped = await fakeRun('capped', {
      state: { done: true, stopKind: 'epochs', stopReason: 'reached 3 epochs', epoch: 3, elapsedMs: 6 * 60_000 },
      budget: { epochs: 3 },
    });
    assert.deepEqual(await runStatus(capped, { epochs: 3 }), {
      kind: 'finished',
      elapsedMinutes: 6,
      reason: 'reached 3 epochs',
    });
    assert.deepEqual(await runStatus(capped, { epochs: 5 }), { kind: 'unfinished', elapsedMinutes: 6 });
    // Killed in its third epoch: two complete epochs in the last checkpoint, not done.
    const killed = await fakeRun('killed-epochs', { state: { done: false, epoch: 2, batch: 7, elapsedMs: 60_000 } });
    assert.equal((await runStatus(killed, { epochs: 3 })).kind, 'unfinished');
    assert.equal((await runStatus(killed, {})).kind, 'unfinished', 'no budget: only the stopping rule finishes it');
    assert.equal((await runStatus(killed, { epochs: 2 })).kind, 'finished');
    const ruled = await fakeRun('ruled', {
      state: { done: true, stopKind: 'plateau', stopReason: 'no validation gain for 20 epochs', epoch: 31 },
    });
    for (const budget of [{}, { epochs: 40 }, { minutes: 600 }])
      assert.equal((await runStatus(ruled, budget)).kind, 'finished', JSON.stringify(budget));
  });

  test('a grid without a time budget refuses runs trained under one, or under a smaller cap when it has none', async () => {
    const out = join(dir, 'converge-grid');
    await mkdir(out, { recursive: true });
    const timed = await fakeRun('converge-grid/src-tgt-learned', { budget: { maxMinutes: 30 } });
    const spec = {
      out,
      dataDir: '/nowhere',
      arch: 'rnn-attn',
      preset: 'tiny',
      seed: 1,
      pairs: [{ src: 'src', tgt: 'tgt' }],
      heads: ['learned'],
      log: () => {},
    };
    await assert.rejects(trainGrid({ ...spec, maxEpochs: 10 }), (err: Error) =>
      err.message.startsWith(`${timed} was trained under a time budget of 30 min`),
    );
    await rm(timed, { recursive: true });
    const capped = await fakeRun('converge-grid/src-tgt-learned', { budget: { epochs: 4 } });
    await assert.rejects(trainGrid(spec), (err: Error) => err.message.includes('give --max-epochs 4 or more'));
    await assert.rejects(trainGrid({ ...spec, maxEpochs: 0 }), /maxEpochs must be a positive integer/);
    await rm(capped, { recursive: true });
  });

  test("a resume drops metrics lines past its checkpoint's step (killed between an epoch's line and its save)", async () => {
    const killed = await fakeRun('line-not-saved', {
      metrics: [
        { ...line(1, true), step: 10 },
        { ...line(2, true), epoch: 2, step: 20 },
      ],
    });
    await dropLostMetrics(killed, 10);
    assert.deepEqual(
      (await readFile(join(killed, 'metrics.jsonl'), 'utf8'))
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).step),
      [10],
    );
    await dropLostMetrics(killed, 10);
    assert.equal((await readFile(join(killed, 'metrics.jsonl'), 'utf8')).trim().split('\n').length, 1);
  });

  test('a corrupt metrics line is refused with its file and line number', async () => {
    const bad = await fakeRun('bad-metrics');
    await writeFile(join(bad, 'metrics.jsonl'), `${JSON.stringify(line(1, true))}\n{"epoch": "x"}\n`);
    await assert.rejects(runStatus(bad, 20), (err: Error) => err.message.includes(`${join(bad, 'metrics.jsonl')}:2`));
  });

  test('a folder holding another run is refused before anything trains, saying what differs', async () => {
    const out = join(dir, 'grid');
    await mkdir(out, { recursive: true });
    await rm(join(out, 'src-tgt-learned'), { recursive: true, force: true });
    const other = await fakeRun('grid/src-tgt-learned', { head: 'tied', metrics: [line(0.1, false)] });
    const lines: string[] = [];
    await assert.rejects(
      trainGrid(toyGrid(out, ['learned'], (l) => lines.push(l))),
      (err: Error) =>
        err.message.startsWith(other) && err.message.includes('head=tied') && err.message.includes('head=learned'),
    );
    assert.deepEqual(lines, []);
  });
});

describe('a grid with a run folder another trainer holds', () => {
  test('is refused before anything starts, naming the folder and the trainer pid', async () => {
    const out = join(dir, 'locked-grid');
    const held = await fakeRun('locked-grid/src-tgt-learned', { metrics: [line(0.1, false)] });
    await fakeRun('locked-grid/src-tgt-tied', { head: 'tied', metrics: [line(0.1, false)] });
    // A live process on this host: this one (as when an experiment killed outright left its trainer running).
    const lock = lockRunFolder(held, () => undefined);
    const spec = toyGrid(out, ['learned', 'tied'], () => undefined);
    try {
      await assert.rejects(trainGrid(spec), (err: Error) =>
        err.message.startsWith(`${held} is being trained by pid ${process.pid} since `),
      );
      assert.ok(!existsSync(join(out, 'logs')), 'no trainer was started');
    } finally {
      lock.release();
    }
  });
});

describe('grid layout', () => {
  test('runs in <out>/<src>-<tgt>-<head>/, pair by pair', () => {
    const runs = gridRuns({
      out: '/g',
      pairs: [parsePair('de-en'), parsePair('en-de')],
      heads: ['learned', 'hadamard'],
    });
    assert.deepEqual(
      runs.map((r) => r.dir),
      ['/g/de-en-learned', '/g/de-en-hadamard', '/g/en-de-learned', '/g/en-de-hadamard'],
    );
    assert.throws(() => parsePair('de'), /'src-tgt'.*got 'de'/);
    assert.throws(() => parsePair('de-de'), /two different languages/);
  });

  test('exports are looked for in the given folder, the experiment layout, then <run>/export', () => {
    assert.deepEqual(exportCandidates('/g/de-en-learned'), ['/g/artifacts/de-en-learned', '/g/de-en-learned/export']);
    assert.deepEqual(exportCandidates('/g/de-en-learned', '/elsewhere'), [
      '/elsewhere',
      '/g/artifacts/de-en-learned',
      '/g/de-en-learned/export',
    ]);
  });

  test('wasm threads: the cores shared among the heads of a pair, at least one', () => {
    assert.equal(threadsPerRun(4, 2), 1);
    assert.equal(threadsPerRun(2, 16), 8);
    assert.equal(threadsPerRun(5, 16), 3);
  });
});

describe('cached measurements', () => {
  const schema = z.object({ n: z.number() });
  test('computed once per key; another key, a torn file or a schema mismatch computes again', async () => {
    const path = join(dir, 'cache', 'x.json');
    let calls = 0;
    const compute = async () => ({ n: ++calls });
    assert.deepEqual(await cachedJson(path, { checkpoint: 'a', beam: 5 }, schema, compute), { n: 1 });
    assert.deepEqual(await cachedJson(path, { checkpoint: 'a', beam: 5 }, schema, compute), { n: 1 });
    assert.deepEqual(await cachedJson(path, { checkpoint: 'b', beam: 5 }, schema, compute), { n: 2 });
    await writeFile(path, '{"key": {"checkpoint": "b", "beam": 5}, "val');
    assert.deepEqual(await cachedJson(path, { checkpoint: 'b', beam: 5 }, schema, compute), { n: 3 });
    await writeFile(path, JSON.stringify({ key: { checkpoint: 'b', beam: 5 }, value: { n: 'three' } }));
    assert.deepEqual(await cachedJson(path, { checkpoint: 'b', beam: 5 }, schema, compute), { n: 4 });
  });
});

describe('a grid run killed before its first checkpoint', () => {
  test('starts anew (a --resume would refuse a folder with no checkpoint)', async () => {
    const out = join(dir, 'unsaved-grid');
    await fakeRun('unsaved-grid/src-tgt-learned', { metrics: [] });
    const logged: string[] = [];
    const spec = toyGrid(out, ['learned'], (line) => logged.push(line));
    // The corpus is not there, so the new trainer fails at once: what matters is how it was started.
    await assert.rejects(trainGrid(spec), (err: Error) => {
      assert.match(err.message, /frost train --arch rnn-attn --head learned .* exited with 1/);
      assert.doesNotMatch(err.message, /--resume/);
      return true;
    });
    assert.ok(
      logged.some((l) => /src-tgt-learned: no checkpoint saved yet, started anew/.test(l)),
      logged.join('\n'),
    );
  });

  test('a save torn by the kill counts as none; a whole one under a temporary name is resumed', async () => {
    const out = join(dir, 'torn-grid');
    const torn = await fakeRun('torn-grid/src-tgt-learned', { metrics: [] });
    // Killed while writing its first `last`: the manifest is there, tensors.bin is short of its bytes.
    const tmp = join(torn, 'checkpoints', 'last.tmp-4242');
    await mkdir(tmp, { recursive: true });
    await writeFile(join(tmp, 'checkpoint.json'), JSON.stringify({ bytes: 64, state: { step: 10 } }));
    await writeFile(join(tmp, 'tensors.bin'), Buffer.alloc(16));
    const logged: string[] = [];
    await assert.rejects(trainGrid(toyGrid(out, ['learned'], (line) => logged.push(line))), (err: Error) => {
      assert.doesNotMatch(err.message, /--resume/);
      return true;
    });
    assert.ok(
      logged.some((l) => /src-tgt-learned: no checkpoint saved yet, started anew/.test(l)),
      logged.join('\n'),
    );

    // The same save, whole: the run resumes from it (and fails there, the corpus being absent).
    await rm(torn, { recursive: true, force: true });
    await fakeRun('torn-grid/src-tgt-learned', { metrics: [] });
    await mkdir(tmp, { recursive: true });
    await writeFile(join(tmp, 'checkpoint.json'), JSON.stringify({ bytes: 16, state: { step: 10 } }));
    await writeFile(join(tmp, 'tensors.bin'), Buffer.alloc(16));
    logged.length = 0;
    await assert.rejects(trainGrid(toyGrid(out, ['learned'], (line) => logged.push(line))), (err: Error) => {
      assert.match(err.message, /--resume/);
      return true;
    });
    assert.ok(
      logged.some((l) => /src-tgt-learned: resuming at/.test(l)),
      logged.join('\n'),
    );
  });
});
