/**
 * Links and moved folders (issue #20, points 3 and 5): `/reports/` serves nothing whose real path
 * leaves the reports folder, while `--models DIR` follows a linked model folder (`DIR/current ->
 * v3`), and `--watch` keeps following a model folder replaced by `mv`.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { findModelDirs } from '../serve/model-folders.ts';
import { startServer } from '../serve/server.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';

let root: string;

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-paths-'));
});

after(async () => {
  await rm(root, { recursive: true, force: true });
});

test('/reports/ serves its files, and 404s whatever a link takes outside it', async () => {
  const reports = join(root, 'reports');
  const secret = join(root, 'secret');
  await mkdir(join(reports, 'run1'), { recursive: true });
  await mkdir(join(reports, 'leaky'), { recursive: true });
  await mkdir(secret, { recursive: true });
  await writeFile(join(reports, 'run1', 'report.html'), '<p>run1</p>');
  await writeFile(join(secret, 'passwd'), 'root:x:0:0');
  await writeFile(join(secret, 'report.html'), '<p>secret</p>');
  await symlink(secret, join(reports, 'etc-link'));
  await symlink(join(secret, 'passwd'), join(reports, 'run1', 'passwd-link'));
  await symlink(join(secret, 'report.html'), join(reports, 'leaky', 'report.html'));
  // A link that stays inside the folder is fine.
  await symlink(join(reports, 'run1'), join(reports, 'latest'));

  await writeTinyModelDir(join(root, 'models-a', 'tiny'));
  const server = await startServer({
    modelsDir: join(root, 'models-a'),
    port: 0,
    intraOpNumThreads: 1,
    workers: 1,
    reportsDir: reports,
    log: () => undefined,
  });
  try {
    const get = async (path: string) => {
      const res = await fetch(`${server.url}${path}`);
      return { status: res.status, text: await res.text() };
    };
    assert.deepEqual(await get('/reports/run1/'), { status: 200, text: '<p>run1</p>' });
    assert.deepEqual(await get('/reports/latest/report.html'), { status: 200, text: '<p>run1</p>' });
    for (const path of [
      '/reports/etc-link/passwd',
      '/reports/etc-link/',
      '/reports/run1/passwd-link',
      '/reports/leaky/',
      '/reports/leaky/report.html',
    ]) {
      const a = await get(path);
      assert.equal(a.status, 404, `${path}: ${a.text}`);
      assert.doesNotMatch(a.text, /root:x|secret/, path);
      assert.equal(JSON.parse(a.text).code, 'FROST_ERR_NOT_FOUND');
    }
    assert.equal((await get('/reports/%2e%2e/secret/passwd')).status, 404);
  } finally {
    await server.close();
  }
});

test('--models DIR loads a linked model folder (DIR/current -> v3) once', async () => {
  const versions = join(root, 'versions');
  await writeTinyModelDir(join(versions, 'v3'), { name: 'linked' });
  const models = join(root, 'models-b');
  await mkdir(models, { recursive: true });
  await symlink(join(versions, 'v3'), join(models, 'current'));
  const quiet = () => undefined;
  const server = await startServer({ modelsDir: models, port: 0, intraOpNumThreads: 1, workers: 1, log: quiet });
  try {
    const list = (await (await fetch(`${server.url}/v1/models`)).json()) as { models: Array<{ name: string }> };
    assert.deepEqual(
      list.models.map((m) => m.name),
      ['linked'],
    );
    const res = await fetch(`${server.url}/v1/translate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"text":"a man runs ."}',
    });
    assert.equal(res.status, 200);
  } finally {
    await server.close();
  }
});

test('--watch follows a model folder replaced by mv, and keeps following it', { timeout: 60_000 }, async () => {
  const models = join(root, 'models-c');
  const dir = await writeTinyModelDir(join(models, 'tiny'));
  const reloads: boolean[] = [];
  let notify: (() => void) | undefined;
  const nextReload = () => new Promise<void>((resolve) => (notify = resolve));
  const server = await startServer({
    modelsDir: dir,
    port: 0,
    intraOpNumThreads: 1,
    workers: 1,
    watch: true,
    log: () => undefined,
    onReload: (_name, ok) => {
      reloads.push(ok);
      notify?.();
    },
  });
  const text = 'a red dog runs on the house';
  const translate = async () => {
    const res = await fetch(`${server.url}/v1/translate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text }),
    });
    return ((await res.json()) as { translations: Array<{ text: string }> }).translations[0]!.text;
  };
  const expected = async (seed: number) => {
    const runtime = await loadModelDir(await writeTinyModelDir(join(root, `expect-${seed}`), { seed }), {
      intraOpNumThreads: 1,
    });
    const [t] = await runtime.translate([text]);
    await runtime.release();
    return t!.text;
  };
  try {
    // Each replacement: a new version written beside it, the old one moved away, the new one moved in.
    for (const seed of [8, 9]) {
      await writeTinyModelDir(join(models, `next-${seed}`), { seed });
      const reloaded = nextReload();
      await rename(dir, join(models, `old-${seed}`));
      await rename(join(models, `next-${seed}`), dir);
      await reloaded;
      while (!reloads.at(-1)) await nextReload();
      assert.equal(await translate(), await expected(seed), `after replacement with seed ${seed}`);
    }
  } finally {
    await server.close();
  }
});

test('--models skips the folders a killed export leaves beside a model (NAME.tmp-PID, NAME.old-PID)', async () => {
  const models = join(root, 'models-leftovers');
  await writeTinyModelDir(join(models, 'tiny'));
  // Both hold a whole card: a kill after the new model was written, or between the swap's two renames.
  await writeTinyModelDir(join(models, 'tiny.tmp-4242'));
  await writeTinyModelDir(join(models, 'tiny.old-4242'));
  assert.deepEqual(await findModelDirs(models), [join(models, 'tiny')]);
});
