/**
 * Model folders as hostile input (issue #39, item 1): every file a card names is resolved and must
 * lie inside the folder's real path, be a regular file and fit its size limit, checked before it is
 * read, at load (start-up and `--watch` reloads) and again on each `GET /v1/models/:name/files/:file`;
 * and a model kept under a dot-folder (`~/.cache/frost/models/...`) serves its files.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, stat, symlink, truncate, writeFile } from 'node:fs/promises';
import { get as httpGet } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadLmModelDir, readLmCard } from '../core/runtime/load-lm-node.ts';
import { loadModelDir, readModelCard } from '../core/runtime/load-node.ts';
import { MODEL_CARD_FILE } from '../core/runtime/model-card.ts';
import { MODEL_FILE_LIMITS } from '../core/runtime/model-files.ts';
import { startServer, type RunningServer } from '../serve/server.ts';
import { TINY_LM_STEP_FILE, writeTinyLmDir } from './helpers/tiny-lm.ts';
import { assertRefusedToStart } from './helpers/refused-start.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';

const PASSWD = '/etc/passwd';
const quiet = () => undefined;
let root: string;

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-model-files-'));
});

after(async () => {
  await rm(root, { recursive: true, force: true });
});

/** The two kinds of model folder, and the graph each reads. */
const KINDS = [
  { kind: 'translation', name: 'tiny-en-de', graph: 'decoder.onnx', write: (dir: string) => writeTinyModelDir(dir) },
  { kind: 'language', name: 'tiny-lm', graph: TINY_LM_STEP_FILE, write: (dir: string) => writeTinyLmDir(dir) },
] as const;

const load = (kind: (typeof KINDS)[number]['kind'], dir: string) =>
  kind === 'translation' ? loadModelDir(dir, { intraOpNumThreads: 1 }) : loadLmModelDir(dir, { intraOpNumThreads: 1 });

/** Adds `file` to the card's `files`, recorded at `bytes`. */
async function listInCard(dir: string, file: string, bytes: number): Promise<void> {
  const path = join(dir, MODEL_CARD_FILE);
  const card = JSON.parse(await readFile(path, 'utf8')) as { files: Record<string, { bytes: number }> };
  card.files[file] = { bytes };
  await writeFile(path, JSON.stringify(card, null, 2));
}

const serve = (modelsDir: string, extra: { watch?: boolean; onReload?: (model: string, ok: boolean) => void } = {}) =>
  startServer({ modelsDir, port: 0, intraOpNumThreads: 1, workers: 1, log: quiet, ...extra });

async function get(server: RunningServer, path: string) {
  const res = await fetch(`${server.url}${path}`);
  const bytes = new Uint8Array(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, bytes, text: new TextDecoder().decode(bytes) };
}

describe('a card listing a link out of its folder', () => {
  for (const { kind, name } of KINDS) {
    test(`${kind} model: notes.txt -> /etc/passwd is refused at start-up, naming the file`, async () => {
      const dir = await KINDS.find((k) => k.kind === kind)!.write(join(root, `startup-${kind}`, name));
      await listInCard(dir, 'notes.txt', (await stat(PASSWD)).size);
      await symlink(PASSWD, join(dir, 'notes.txt'));
      await assert.rejects(load(kind, dir), (err: Error) => {
        assert.equal(err.message, `${join(dir, 'notes.txt')}: it resolves outside the model folder (to ${PASSWD})`);
        return true;
      });
      await assertRefusedToStart(
        serve(join(root, `startup-${kind}`)),
        /notes\.txt: it resolves outside the model folder/,
      );
    });

    test(`${kind} model: a listed file turned into a link to /etc/passwd under --watch is refused, reload and GET`, async () => {
      const models = join(root, `watch-${kind}`);
      const dir = await KINDS.find((k) => k.kind === kind)!.write(join(models, name));
      // A sibling of the other kind: each server here holds a translation model and a language model.
      if (kind === 'language') await writeTinyModelDir(join(models, 'tiny'));
      else await writeTinyLmDir(join(models, 'lm'));
      await writeFile(join(dir, 'notes.txt'), 'model notes\n');
      await listInCard(dir, 'notes.txt', 'model notes\n'.length);
      const reloads: boolean[] = [];
      let notify: (() => void) | undefined;
      const server = await serve(models, {
        watch: true,
        onReload: (model, ok) => {
          if (model !== name) return;
          reloads.push(ok);
          notify?.();
        },
      });
      try {
        assert.equal((await get(server, `/v1/models/${name}/files/notes.txt`)).text, 'model notes\n');
        const reloaded = new Promise<void>((resolve) => (notify = resolve));
        await rm(join(dir, 'notes.txt'));
        await symlink(PASSWD, join(dir, 'notes.txt'));
        await reloaded;
        assert.deepEqual(reloads, [false]);
        const res = await get(server, `/v1/models/${name}/files/notes.txt`);
        assert.equal(res.status, 404);
        assert.doesNotMatch(res.text, /root:/);
        const body = JSON.parse(res.text) as { code: string; message: string };
        assert.equal(body.code, 'FROST_ERR_MODEL_FILE_UNAVAILABLE');
        assert.equal(body.message, `Model '${name}' cannot serve 'notes.txt': it resolves outside the model folder`);
      } finally {
        await server.close();
      }
    });
  }
});

test('after a refused --watch reload, the files route hands out the served card, not the refused one (issue #51, 8)', async () => {
  const models = join(root, 'refused-reload');
  const dir = await writeTinyModelDir(join(models, 'tiny'));
  const path = join(dir, MODEL_CARD_FILE);
  const good = await readFile(path, 'utf8');
  const reloads: boolean[] = [];
  let notify: (() => void) | undefined;
  const server = await serve(models, {
    watch: true,
    onReload: (_model, ok) => {
      reloads.push(ok);
      notify?.();
    },
  });
  try {
    // A new card whose target vocabulary does not fit the decoder: refused, the old version keeps serving.
    const bad = JSON.parse(good) as { target: { tokens: string[] } };
    bad.target.tokens = bad.target.tokens.slice(0, 10);
    let reloaded = new Promise<void>((resolve) => (notify = resolve));
    await writeFile(path, JSON.stringify(bad));
    await reloaded;
    assert.deepEqual(reloads, [false]);
    const card = await get(server, `/v1/models/tiny-en-de/files/${MODEL_CARD_FILE}`);
    assert.equal(card.status, 200);
    const served = JSON.parse(card.text) as { target: { tokens: string[] } };
    assert.equal(served.target.tokens.length, (JSON.parse(good) as typeof bad).target.tokens.length);
    const graph = await get(server, '/v1/models/tiny-en-de/files/decoder.onnx');
    assert.equal(graph.status, 404);
    assert.match(graph.text, /FROST_ERR_MODEL_FILE_UNAVAILABLE.*a new version that was refused/);

    // The good card back: it loads, and the files are the folder's again, byte for byte.
    reloaded = new Promise<void>((resolve) => (notify = resolve));
    await writeFile(path, good);
    await reloaded;
    assert.deepEqual(reloads, [false, true]);
    assert.equal((await get(server, `/v1/models/tiny-en-de/files/${MODEL_CARD_FILE}`)).text, good);
    assert.equal((await get(server, '/v1/models/tiny-en-de/files/decoder.onnx')).status, 200);
  } finally {
    await server.close();
  }
});

describe('graphs and cards are checked before they are read', () => {
  for (const { kind, name, graph } of KINDS) {
    test(`${kind} model: a graph linked out of the folder is refused, even one of the recorded size`, async () => {
      const dir = await KINDS.find((k) => k.kind === kind)!.write(join(root, `graph-link-${kind}`, name));
      const outside = join(root, `graph-link-${kind}`, graph);
      await copyFile(join(dir, graph), outside);
      await rm(join(dir, graph));
      await symlink(outside, join(dir, graph));
      await assert.rejects(load(kind, dir), (err: Error) => {
        assert.equal(err.message, `${join(dir, graph)}: it resolves outside the model folder (to ${outside})`);
        return true;
      });
    });

    test(`${kind} model: a graph or card linked to a device, or a FIFO, is refused before it is opened`, async () => {
      const dir = await KINDS.find((k) => k.kind === kind)!.write(join(root, `device-${kind}`, name));
      for (const file of [graph, MODEL_CARD_FILE]) {
        const kept = join(root, `device-${kind}`, file);
        await copyFile(join(dir, file), kept);
        await rm(join(dir, file));
        await symlink('/dev/zero', join(dir, file));
        await assert.rejects(load(kind, dir), (err: Error) => {
          assert.equal(err.message, `${join(dir, file)}: it resolves outside the model folder (to /dev/zero)`);
          return true;
        });
        await rm(join(dir, file));
        // Opening a FIFO for reading waits for a writer: the loader must not get that far.
        execFileSync('mkfifo', [join(dir, file)]);
        await assert.rejects(load(kind, dir), (err: Error) => {
          assert.equal(err.message, `${join(dir, file)}: not a regular file (a FIFO)`);
          return true;
        });
        await rm(join(dir, file));
        await copyFile(kept, join(dir, file));
      }
      await (await load(kind, dir)).release();
    });

    test(`${kind} model: a graph of another size than the card records is refused unread (issue #51, 4)`, async () => {
      const dir = await KINDS.find((k) => k.kind === kind)!.write(join(root, `sparse-${kind}`, name));
      // 1 GiB that takes no disk (sparse): read whole, it would take 1 GiB of memory before its size was compared.
      const size = 2 ** 30;
      await truncate(join(dir, graph), size);
      const peakBefore = process.resourceUsage().maxRSS;
      await assert.rejects(load(kind, dir), (err: Error) => {
        assert.match(
          err.message,
          new RegExp(
            `^${join(dir, graph)}: ${size} bytes, but the model card records \\d+ \\(files\\['${graph}'\\]\\.bytes\\)`,
          ),
        );
        return true;
      });
      const grewKiB = process.resourceUsage().maxRSS - peakBefore;
      assert.ok(grewKiB < 256 * 1024, `peak RSS grew by ${grewKiB} KiB: the graph was read`);
    });

    test(`${kind} model: a card over ${MODEL_FILE_LIMITS.card} bytes is refused unread`, async () => {
      const dir = await KINDS.find((k) => k.kind === kind)!.write(join(root, `big-card-${kind}`, name));
      const path = join(dir, MODEL_CARD_FILE);
      const card = JSON.parse(await readFile(path, 'utf8')) as { config: Record<string, unknown> };
      card.config.padding = 'x'.repeat(MODEL_FILE_LIMITS.card);
      await writeFile(path, JSON.stringify(card));
      const read = kind === 'translation' ? readModelCard(dir) : readLmCard(dir);
      await assert.rejects(read, (err: Error) => {
        assert.match(
          err.message,
          new RegExp(`^${path}: \\d+ bytes, over the limit of ${MODEL_FILE_LIMITS.card} bytes`),
        );
        return true;
      });
      await assertRefusedToStart(
        serve(join(root, `big-card-${kind}`)),
        /over the limit of 8388608 bytes for a model card/,
      );
    });
  }
});

describe('a card bounded in shape, not only in bytes (issue #51, item 3)', () => {
  /** The card's text edited as `edit` says, written back as compact JSON (a hostile card need not be pretty). */
  async function editCardText(dir: string, edit: (card: Record<string, unknown>) => string): Promise<void> {
    const path = join(dir, MODEL_CARD_FILE);
    await writeFile(path, edit(JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>));
  }
  const CASES = [
    {
      what: '600,000 files entries',
      edit: (card: Record<string, unknown>) => {
        const files = card.files as Record<string, unknown>;
        for (let i = 0; i < 600_000; i++) files[i] = 0; // 7 MB, within the byte limit
        return JSON.stringify(card);
      },
      reason: /not a valid model card \(files: 60000\d entries, over the limit of 256\)$/,
    },
    {
      what: 'a 100 kB string in config',
      edit: (card: Record<string, unknown>) =>
        JSON.stringify({ ...card, config: { ...(card.config as object), note: 'x'.repeat(100_000) } }),
      reason: /not a valid model card \(config\.note: a string of 100000 characters, over the limit of 4096\)$/,
    },
    {
      what: 'a config nested a million deep',
      edit: (card: Record<string, unknown>) =>
        JSON.stringify({ ...card, config: {} }).replace(
          '"config":{}',
          `"config":{"x":${'['.repeat(1e6)}${']'.repeat(1e6)}}`,
        ),
      reason: /not a model card \(nested deeper than 32 levels\)$/,
    },
    {
      what: 'config of 70 kB in short strings',
      edit: (card: Record<string, unknown>) =>
        JSON.stringify({
          ...card,
          config: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`k${i}`, 'y'.repeat(350)])),
        }),
      reason: /not a valid model card \(config: \d+ bytes of JSON, over the limit of 65536\)$/,
    },
  ];
  for (const { kind, name } of KINDS) {
    for (const c of CASES) {
      test(`${kind} model: ${c.what} refused, naming the card and the field`, async () => {
        const dir = await KINDS.find((k) => k.kind === kind)!.write(join(root, `shape-${kind}-${c.what.length}`, name));
        await editCardText(dir, c.edit);
        await assert.rejects(load(kind, dir), (err: Error) => {
          assert.ok(err.message.startsWith(`${join(dir, MODEL_CARD_FILE)}: `), err.message.slice(0, 200));
          assert.match(err.message, c.reason);
          return true;
        });
      });
    }
  }

  test('beside a good model: /readyz and /v1/models list the refusal in under 1 kB each', async () => {
    const models = join(root, 'shape-serve');
    await writeTinyModelDir(join(models, 'good'));
    const bad = await writeTinyModelDir(join(models, 'bad'));
    await editCardText(bad, CASES[0]!.edit);
    const server = await serve(models);
    try {
      for (const path of ['/readyz', '/v1/models']) {
        const { text } = await get(server, path);
        const refused = (JSON.parse(text) as { refused: Array<{ folder: string; reason: string }> }).refused;
        assert.deepEqual(
          refused.map((r) => r.folder),
          ['bad'],
        );
        assert.ok(JSON.stringify(refused).length < 1024, `${path}: ${JSON.stringify(refused).length} bytes`);
      }
    } finally {
      await server.close();
    }
  });
});

describe('a model folder under a dot-folder', () => {
  test('serves its files (~/.cache/frost/models/NAME), and a listed file that is missing is a 404 with the reason', async () => {
    const models = join(root, 'home', '.cache', 'frost', 'models');
    const dir = await writeTinyModelDir(join(models, 'tiny'));
    const lm = await writeTinyLmDir(join(models, 'lm'));
    await listInCard(dir, 'missing.txt', 10);
    const server = await serve(models);
    try {
      for (const [model, folder, file] of [
        ['tiny-en-de', dir, MODEL_CARD_FILE],
        ['tiny-en-de', dir, 'encoder.onnx'],
        ['tiny-en-de', dir, 'decoder.onnx'],
        ['tiny-lm', lm, MODEL_CARD_FILE],
        ['tiny-lm', lm, TINY_LM_STEP_FILE],
      ] as const) {
        const res = await get(server, `/v1/models/${model}/files/${file}`);
        assert.equal(res.status, 200, `${model}/${file}: ${res.text.slice(0, 200)}`);
        const expected = new Uint8Array(await readFile(join(folder, file)));
        assert.deepEqual(res.bytes, expected, `${model}/${file}`);
        assert.equal(res.headers.get('content-length'), String(expected.length));
        const type = file.endsWith('.json') ? 'application/json' : 'application/octet-stream';
        assert.equal(res.headers.get('content-type'), type);
        // The page revalidates by ETag: an unchanged file is a 304.
        const etag = res.headers.get('etag');
        assert.ok(etag, `${model}/${file}: ETag`);
        // Not fetch: it adds `Cache-Control: no-cache` to a request with If-None-Match, as its spec says.
        const again = await new Promise<number>((resolve, reject) =>
          httpGet(`${server.url}/v1/models/${model}/files/${file}`, { headers: { 'if-none-match': etag } }, (r) => {
            r.resume();
            resolve(r.statusCode!);
          }).on('error', reject),
        );
        assert.equal(again, 304);
      }
      const missing = await get(server, '/v1/models/tiny-en-de/files/missing.txt');
      assert.equal(missing.status, 404);
      assert.deepEqual(JSON.parse(missing.text), {
        error: 'Not Found',
        code: 'FROST_ERR_MODEL_FILE_UNAVAILABLE',
        message: "Model 'tiny-en-de' cannot serve 'missing.txt': file not found",
        statusCode: 404,
        request_id: missing.headers.get('x-request-id'),
      });
    } finally {
      await server.close();
    }
  });
});

test('a folder reached through a link serves what lies inside its real path', async () => {
  const versions = join(root, 'versions');
  const v3 = await writeTinyModelDir(join(versions, 'v3'));
  const models = join(root, 'linked-models');
  await mkdir(models, { recursive: true });
  await symlink(v3, join(models, 'current'));
  const server = await serve(models);
  try {
    const res = await get(server, '/v1/models/tiny-en-de/files/decoder.onnx');
    assert.equal(res.status, 200);
    assert.deepEqual(res.bytes, new Uint8Array(await readFile(join(v3, 'decoder.onnx'))));
  } finally {
    await server.close();
  }
});
