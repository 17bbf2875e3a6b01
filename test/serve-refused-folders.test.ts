/**
 * One bad folder does not stop the server (issue #39 item 2): `--models D` with one good model and bad
 * ones (a truncated card, a truncated or random graph, a corrupt subword model, a graph named by an
 * absolute path) serves the good one, at start-up as under `--watch`, and `/readyz` and `/v1/models`
 * name each refused folder and why. Only a folder with no loadable model at all stops the start. Under
 * `--watch` a refused folder is watched too: fixed, it is served under its name and leaves `refused`; a new
 * folder is served the same way, and one that reuses a served model's name is refused.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { cp, mkdtemp, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { FolderRefusal, ModelsResponse } from '../core/wire.ts';
import { startServer, type RunningServer } from '../serve/server.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';

let root: string;
let models: string;

/** Each bad folder, and what its refusal must say. */
const BAD: Record<string, RegExp> = {
  'truncated-card': /truncated-card\/model-card\.json: not a model card \(invalid JSON/,
  'truncated-onnx': /truncated-onnx\/decoder\.onnx: \d+ bytes, but the model card records \d+/,
  'random-onnx': /random-onnx\/encoder\.onnx: not a loadable ONNX encoder graph/,
  'corrupt-spm': /corrupt-spm\/subword\.model: not a SentencePiece model/,
  'absolute-graph':
    /absolute-graph\/model-card\.json: graphs\.encoder\.file '\/srv\/models\/good\/encoder\.onnx' must name a file inside the model directory/,
};

async function editCard(dir: string, edit: (card: { graphs: { encoder: { file: string } } }) => void): Promise<void> {
  const path = join(dir, 'model-card.json');
  const card = JSON.parse(await readFile(path, 'utf8')) as { graphs: { encoder: { file: string } } };
  edit(card);
  await writeFile(path, JSON.stringify(card));
}

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-refused-'));
  models = join(root, 'models');
  await writeTinyModelDir(join(models, 'good'), { name: 'good' });
  const card = join(await writeTinyModelDir(join(models, 'truncated-card'), { name: 'b1' }), 'model-card.json');
  await truncate(card, Math.floor((await readFile(card)).length / 2));
  const cut = join(await writeTinyModelDir(join(models, 'truncated-onnx'), { name: 'b2' }), 'decoder.onnx');
  await truncate(cut, 10);
  const random = join(await writeTinyModelDir(join(models, 'random-onnx'), { name: 'b3' }), 'encoder.onnx');
  // Random bytes of the recorded size pass the size check and must fail in ONNX Runtime.
  await writeFile(random, randomBytes((await readFile(random)).length));
  const spm = join(
    await writeTinyModelDir(join(models, 'corrupt-spm'), { name: 'b4', subword: 'unigram' }),
    'subword.model',
  );
  await writeFile(spm, Buffer.alloc((await readFile(spm)).length, 7));
  const absolute = await writeTinyModelDir(join(models, 'absolute-graph'), { name: 'b5' });
  await editCard(absolute, (c) => (c.graphs.encoder.file = '/srv/models/good/encoder.onnx'));
});

after(async () => {
  await rm(root, { recursive: true, force: true });
});

async function get<T>(server: RunningServer, path: string): Promise<{ status: number; body: T }> {
  const res = await fetch(`${server.url}${path}`);
  return { status: res.status, body: (await res.json()) as T };
}

/** The good model answers; /readyz and /v1/models name every bad folder with its reason, and no server path. */
async function checkServed(server: RunningServer, logged: string[]): Promise<void> {
  const res = await fetch(`${server.url}/v1/translate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"text":"a man runs ."}',
  });
  assert.equal(res.status, 200, await res.clone().text());
  assert.equal(((await res.json()) as { model: string }).model, 'good');

  const ready = await get<{ status: string; models: string[]; refused: FolderRefusal[] }>(server, '/readyz');
  assert.equal(ready.status, 200);
  assert.equal(ready.body.status, 'ready');
  assert.deepEqual(ready.body.models, ['good']);
  const list = await get<ModelsResponse>(server, '/v1/models');
  assert.deepEqual(
    list.body.models.map((m) => m.name),
    ['good'],
  );
  assert.equal(list.body.default, 'good');
  for (const refused of [ready.body.refused, list.body.refused!]) {
    assert.deepEqual(refused.map((r) => r.folder).sort(), Object.keys(BAD).sort());
    for (const r of refused) {
      assert.match(r.reason, BAD[r.folder]!, `${r.folder}: ${r.reason}`);
      assert.ok(!r.reason.includes(root), `no server path in ${r.reason}`);
    }
  }
  for (const folder of Object.keys(BAD)) {
    const line = logged.find((l) => l.includes('model folder refused') && l.includes(join(models, folder)));
    assert.ok(line, `a log line names ${folder}`);
  }
}

/** Polls `check` until it holds (a --watch reload is debounced, then loads in threads). */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function translate(server: RunningServer, model: string): Promise<{ status: number; model?: string }> {
  const res = await fetch(`${server.url}/v1/translate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'a man runs .', model }),
  });
  return { status: res.status, model: ((await res.json()) as { model?: string }).model };
}

/** What /readyz and /v1/models say: the models served, and the refused folders with their reasons. */
async function served(
  server: RunningServer,
): Promise<{ ready: string[]; listed: string[]; refused: FolderRefusal[][] }> {
  const ready = await get<{ models: string[]; refused: FolderRefusal[] }>(server, '/readyz');
  const list = await get<ModelsResponse>(server, '/v1/models');
  return {
    ready: ready.body.models,
    listed: list.body.models.map((m) => m.name),
    // Both leave `refused` out when no folder is refused.
    refused: [ready.body.refused ?? [], list.body.refused ?? []],
  };
}

const watching = (modelsDir: string, logged: string[]) =>
  startServer({ modelsDir, port: 0, intraOpNumThreads: 1, workers: 1, watch: true, log: (l) => logged.push(l) });

describe('a folder with one good model and bad ones', () => {
  test('at start-up: the good model is served, the bad folders refused with their reasons', async () => {
    const logged: string[] = [];
    const server = await startServer({
      modelsDir: models,
      port: 0,
      intraOpNumThreads: 1,
      workers: 1,
      log: (l) => logged.push(l),
    });
    try {
      await checkServed(server, logged);
    } finally {
      await server.close();
    }
  });

  test('under --watch: the same at start-up; a bad new version is listed too, until a good one loads', async () => {
    const logged: string[] = [];
    let notify: ((ok: boolean) => void) | undefined;
    const nextReload = () => new Promise<boolean>((resolve) => (notify = resolve));
    const server = await startServer({
      modelsDir: models,
      port: 0,
      intraOpNumThreads: 1,
      workers: 1,
      watch: true,
      log: (l) => logged.push(l),
      onReload: (name, ok) => name === 'good' && notify?.(ok),
    });
    const card = join(models, 'good', 'model-card.json');
    const good = await readFile(card);
    try {
      await checkServed(server, logged);

      let reloaded = nextReload();
      await writeFile(card, good.subarray(0, 40));
      assert.equal(await reloaded, false);
      const ready = await get<{ refused: FolderRefusal[] }>(server, '/readyz');
      assert.equal(ready.status, 200, 'the previous version keeps serving');
      assert.match(ready.body.refused.find((r) => r.folder === 'good')?.reason ?? '', /not a model card/);

      reloaded = nextReload();
      await writeFile(card, good);
      while (!(await reloaded)) reloaded = nextReload();
      await checkServed(server, logged);
    } finally {
      await writeFile(card, good);
      await server.close();
    }
  });

  test('no loadable model at all stops the start, naming every refused folder', async () => {
    const bad = join(root, 'only-bad');
    for (const name of ['x', 'y']) {
      const dir = await writeTinyModelDir(join(bad, name), { name });
      await truncate(join(dir, 'decoder.onnx'), 10);
    }
    await assert.rejects(
      startServer({ modelsDir: bad, port: 0, intraOpNumThreads: 1, workers: 1, log: () => undefined }),
      (err: Error) =>
        err.message.startsWith(`${bad}: no model could be loaded`) &&
        err.message.includes(join(bad, 'x', 'decoder.onnx')) &&
        err.message.includes(join(bad, 'y', 'decoder.onnx')),
    );
  });

  test('under --watch: a folder refused at start-up is watched; fixed, it is served under its name', async () => {
    const dir = join(root, 'fix');
    await writeTinyModelDir(join(dir, 'good'), { name: 'good' });
    const card = join(await writeTinyModelDir(join(dir, 'broken'), { name: 'late' }), 'model-card.json');
    await truncate(card, 40);
    const fixed = await writeTinyModelDir(join(root, 'fixed-late'), { name: 'late' });
    const logged: string[] = [];
    const server = await watching(dir, logged);
    try {
      let now = await served(server);
      assert.deepEqual(now.listed, ['good']);
      for (const refused of now.refused)
        assert.match(refused[0]?.reason ?? '', /broken\/model-card\.json: .*invalid JSON/);

      // Still bad, differently: each attempt refreshes the reason.
      await writeFile(card, '{}');
      await until('the refusal says what is wrong now', async () => {
        const { refused } = await served(server);
        return refused.every((r) => r.length === 1 && r[0].folder === 'broken' && !/invalid JSON/.test(r[0].reason));
      });
      assert.equal((await translate(server, 'late')).status, 404);

      await cp(fixed, join(dir, 'broken'), { recursive: true, force: true });
      await until('the fixed folder is served', async () => (await served(server)).listed.includes('late'));
      assert.deepEqual(await translate(server, 'late'), { status: 200, model: 'late' });
      now = await served(server);
      assert.deepEqual(now.ready, ['good', 'late']);
      assert.deepEqual(now.listed, ['good', 'late']);
      assert.deepEqual(now.refused, [[], []]);
      assert.deepEqual(await translate(server, 'good'), { status: 200, model: 'good' });
      assert.equal((await get<ModelsResponse>(server, '/v1/models')).body.default, 'good', 'the default stays');
      assert.ok(logged.some((l) => l.includes('"model loaded"') && l.includes(join(dir, 'broken'))));
    } finally {
      await server.close();
    }
  });

  test('under --watch: a new model folder is served; one reusing a served name is refused, naming both, until removed', async () => {
    const dir = join(root, 'grow');
    await writeTinyModelDir(join(dir, 'good'), { name: 'good' });
    const logged: string[] = [];
    const server = await watching(dir, logged);
    try {
      await writeTinyModelDir(join(root, 'staged-third'), { name: 'third' });
      await cp(join(root, 'staged-third'), join(dir, 'third'), { recursive: true });
      await until('the new folder is served', async () => (await served(server)).listed.includes('third'));
      assert.deepEqual(await translate(server, 'third'), { status: 200, model: 'third' });

      await writeTinyModelDir(join(root, 'staged-twin'), { name: 'good' });
      await cp(join(root, 'staged-twin'), join(dir, 'twin'), { recursive: true });
      // A half-copied folder may be refused first for a missing file; the clash is refused once it is whole.
      await until('the clash is refused', async () =>
        (await served(server)).refused[0].some((r) => /two models/.test(r.reason)),
      );
      const now = await served(server);
      assert.deepEqual(now.listed, ['good', 'third']);
      for (const refused of now.refused) {
        assert.deepEqual(
          refused.map((r) => r.folder),
          ['twin'],
        );
        assert.match(refused[0].reason, /two models are named 'good' \(good and twin\)/);
        assert.ok(!refused[0].reason.includes(root), `no server path in ${refused[0].reason}`);
      }
      assert.deepEqual(await translate(server, 'good'), { status: 200, model: 'good' });

      // A folder removed is no longer refused (start-up would not see it).
      await rm(join(dir, 'twin'), { recursive: true });
      await until('the removed folder leaves refused', async () => (await served(server)).refused[0].length === 0);
      assert.deepEqual((await served(server)).refused, [[], []]);
    } finally {
      await server.close();
    }
  });
});
