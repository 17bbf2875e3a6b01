import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadModelDir } from '../core/runtime/load-node.ts';
import type { Seq2SeqRuntime } from '../core/runtime/seq2seq.ts';
import { createApp } from '../serve/app.ts';
import { ModelRegistry } from '../serve/model-registry.ts';
import { startServer, type RunningServer } from '../serve/server.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';

let root: string;
let server: RunningServer;
let direct: Seq2SeqRuntime;
const logLines: string[] = [];

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-serve-'));
  const modelDir = await writeTinyModelDir(join(root, 'models', 'tiny'));
  server = await startServer({
    modelsDir: join(root, 'models'),
    port: 0,
    host: '127.0.0.1',
    intraOpNumThreads: 1,
    log: (line) => logLines.push(line),
  });
  direct = await loadModelDir(modelDir, { intraOpNumThreads: 1 });
});

after(async () => {
  await server?.close();
  await direct?.release();
  await rm(root, { recursive: true, force: true });
});

interface Answer {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON under test
}

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, base = server.url): Promise<Answer> {
  const init: RequestInit = { method, headers: { 'content-type': 'application/json', ...headers } };
  if (body !== undefined) init.body = typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(`${base}${path}`, init);
  assert.match(res.headers.get('content-type') ?? '', /application\/json/, `${method} ${path} answers JSON`);
  return { status: res.status, body: await res.json() };
}

const translate = (body: unknown, base?: string) => call('POST', '/v1/translate', body, {}, base);

/** Checks the error shape and returns the message. */
function assertError(a: Answer, status: number, code: string): string {
  assert.equal(a.status, status, JSON.stringify(a.body));
  assert.equal(a.body.statusCode, status);
  assert.equal(a.body.code, code);
  assert.equal(typeof a.body.error, 'string');
  assert.equal(typeof a.body.message, 'string');
  return a.body.message;
}

describe('POST /v1/translate', () => {
  test('round trip equals Seq2SeqRuntime.translate', async () => {
    const text = 'The red dog sits on a big house and the small cat sits.';
    const a = await translate({ text });
    assert.equal(a.status, 200, JSON.stringify(a.body));
    const [expected] = await direct.translate([text]);
    assert.equal(a.body.model, 'tiny-en-de');
    assert.equal(a.body.translations.length, 1);
    assert.deepEqual(a.body.translations[0], { text: expected.text, score: expected.score, log_prob: expected.logProb });
    assert.ok(expected.text.length > 0);
    assert.equal(typeof a.body.timing.total_ms, 'number');
    assert.equal(a.body.timing.tokens, expected.tokens.length);
  });

  test('texts + options map to the runtime options (model named explicitly)', async () => {
    const texts = ['A man runs.', 'a small cat sits on the ball'];
    const a = await translate({ model: 'tiny-en-de', texts, beam: 3, max_len: 5, length_penalty: 0.5 });
    assert.equal(a.status, 200, JSON.stringify(a.body));
    const expected = await direct.translate(texts, { beam: 3, maxLen: 5, lengthPenalty: 0.5 });
    assert.deepEqual(
      a.body.translations,
      expected.map((t) => ({ text: t.text, score: t.score, log_prob: t.logProb })),
    );
    for (const t of expected) assert.ok(t.tokens.length <= 5);
  });

  test('beam 4 returns n-best lists sorted by score', async () => {
    const a = await translate({ texts: ['A man runs.', 'The red dog sits on a big house.'], beam: 4, n_best: 4 });
    assert.equal(a.status, 200, JSON.stringify(a.body));
    for (const t of a.body.translations) {
      assert.ok(Array.isArray(t.n_best) && t.n_best.length >= 2 && t.n_best.length <= 4, JSON.stringify(t));
      assert.deepEqual(t.n_best[0], { text: t.text, score: t.score, log_prob: t.log_prob });
      for (let k = 1; k < t.n_best.length; k++) assert.ok(t.n_best[k - 1].score >= t.n_best[k].score);
    }
  });

  test('malformed JSON → 400 FROST_ERR_BAD_JSON', async () => {
    assertError(await translate('{"text": "a dog",'), 400, 'FROST_ERR_BAD_JSON');
  });

  test('empty and blank texts → 400 naming the field', async () => {
    assert.match(assertError(await translate({ text: '' }), 400, 'FROST_ERR_INVALID_REQUEST'), /text: must be a non-empty string/);
    assert.match(assertError(await translate({ texts: ['a dog', '   '] }), 400, 'FROST_ERR_INVALID_REQUEST'), /texts\.1: must be a non-empty string/);
    assert.match(assertError(await translate({ texts: [] }), 400, 'FROST_ERR_INVALID_REQUEST'), /texts: must hold at least one text/);
  });

  test('a 100 kB text → 400 with the reason', async () => {
    const message = assertError(await translate({ text: 'a dog '.repeat(17_000) }), 400, 'FROST_ERR_INVALID_REQUEST');
    assert.match(message, /text: must be at most 1000 characters/);
  });

  test('too many texts → 400', async () => {
    const texts = Array.from({ length: 33 }, () => 'a dog');
    assert.match(assertError(await translate({ texts }), 400, 'FROST_ERR_INVALID_REQUEST'), /texts: must hold at most 32 texts/);
  });

  test('unknown model → 404 listing the available ones', async () => {
    const message = assertError(await translate({ model: 'nope', text: 'a dog' }), 404, 'FROST_ERR_UNKNOWN_MODEL');
    assert.match(message, /'nope'.*available: tiny-en-de/);
  });

  test('wrong types → 400 naming the field', async () => {
    assert.match(assertError(await translate({ text: 'a dog', beam: '5' }), 400, 'FROST_ERR_INVALID_REQUEST'), /beam: .*expected number/);
    assert.match(assertError(await translate({ text: 'a dog', beam: 2.5 }), 400, 'FROST_ERR_INVALID_REQUEST'), /beam: .*int/);
    assert.match(assertError(await translate({ text: 'a dog', beam: 17 }), 400, 'FROST_ERR_INVALID_REQUEST'), /beam: /);
    assert.match(assertError(await translate({ texts: ['a dog', 7] }), 400, 'FROST_ERR_INVALID_REQUEST'), /texts\.1: .*expected string/);
    assert.match(assertError(await translate({ text: 'a dog', max_len: 0 }), 400, 'FROST_ERR_INVALID_REQUEST'), /max_len: /);
    assert.match(assertError(await translate({ text: 'a dog', beam: 2, n_best: 3 }), 400, 'FROST_ERR_INVALID_REQUEST'), /n_best: must be <= beam/);
    assert.match(assertError(await translate({ text: 'a dog', nbest: 3 }), 400, 'FROST_ERR_INVALID_REQUEST'), /nbest/);
    assert.match(assertError(await translate([1, 2]), 400, 'FROST_ERR_INVALID_REQUEST'), /\(body\): .*expected object/);
  });

  test('both text and texts, or neither → 400', async () => {
    const both = assertError(await translate({ text: 'a dog', texts: ['a cat'] }), 400, 'FROST_ERR_INVALID_REQUEST');
    assert.match(both, /exactly one of "text" or "texts"/);
    assertError(await translate({ beam: 2 }), 400, 'FROST_ERR_INVALID_REQUEST');
  });

  test('a body that is not JSON → 415', async () => {
    const a = await call('POST', '/v1/translate', 'a dog', { 'content-type': 'text/plain' });
    assert.match(assertError(a, 415, 'FROST_ERR_UNSUPPORTED_MEDIA_TYPE'), /text\/plain/);
  });
});

describe('body size limit', () => {
  let small: Server;
  let base: string;

  before(async () => {
    const registry = new ModelRegistry([{ name: direct.card.name, runtime: direct }]);
    small = createServer(createApp({ registry, limits: { maxBodyBytes: 1024 } }));
    await new Promise<void>((resolve) => small.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(small.address() as AddressInfo).port}`;
  });

  after(async () => {
    await new Promise((resolve) => small.close(resolve));
  });

  test('a body over the limit → 413 FROST_ERR_BODY_TOO_LARGE', async () => {
    const message = assertError(await translate({ text: 'a dog '.repeat(300) }, base), 413, 'FROST_ERR_BODY_TOO_LARGE');
    assert.match(message, /1024 bytes/);
  });

  test('an app built on an existing runtime answers like the server', async () => {
    const a = await translate({ text: 'A man runs.' }, base);
    const b = await translate({ text: 'A man runs.' });
    assert.deepEqual(a.body.translations, b.body.translations);
  });
});

describe('other routes', () => {
  test('GET /v1/models lists cards without the vocabularies', async () => {
    const a = await call('GET', '/v1/models');
    assert.equal(a.status, 200);
    assert.equal(a.body.default, 'tiny-en-de');
    assert.equal(a.body.models.length, 1);
    const card = a.body.models[0];
    assert.equal(card.name, 'tiny-en-de');
    assert.deepEqual(card.source, { lang: 'en', size: 20 });
    assert.deepEqual(card.target, { lang: 'de', size: 20 });
    assert.equal(card.graphs.decoder.logProbs, 'log_probs');
    assert.ok(!JSON.stringify(a.body).includes('"tokens"'), 'no token lists');
  });

  test('GET /healthz', async () => {
    const a = await call('GET', '/healthz');
    assert.equal(a.status, 200);
    assert.deepEqual(a.body, { status: 'ok' });
  });

  test('unknown route → JSON 404', async () => {
    assert.match(assertError(await call('GET', '/v2/nothing'), 404, 'FROST_ERR_NOT_FOUND'), /GET \/v2\/nothing/);
    assertError(await call('GET', '/v1/translate'), 404, 'FROST_ERR_NOT_FOUND');
  });

  test('one log line per request: method, path, status, ms', async () => {
    const before = logLines.length;
    await call('GET', '/healthz?probe=1');
    await translate({ text: '' });
    const lines = logLines.slice(before);
    assert.equal(lines.length, 2, lines.join('\n'));
    assert.match(lines[0], /^GET \/healthz 200 \d+\.\d+ms$/);
    assert.match(lines[1], /^POST \/v1\/translate 400 \d+\.\d+ms$/);
  });
});

describe('ModelRegistry', () => {
  test('several models: requests must name one unless a default is set', async () => {
    const models = [
      { name: 'a', runtime: direct },
      { name: 'b', runtime: direct },
    ];
    const noDefault = new ModelRegistry(models);
    assert.throws(() => noDefault.get(undefined), (err: Error & { code?: string }) => err.code === 'FROST_ERR_NO_DEFAULT_MODEL' && /a, b/.test(err.message));
    assert.equal(new ModelRegistry(models, 'b').get(undefined).name, 'b');
    assert.throws(() => new ModelRegistry(models, 'c'), /--default-model 'c' is not a loaded model; loaded: a, b/);
    assert.throws(() => new ModelRegistry([...models, { name: 'a', runtime: direct }]), /two models are named 'a'/);
  });

  test('loading a directory without models names it', async () => {
    await assert.rejects(ModelRegistry.load(root), (err: Error) => err.message.startsWith(`${root}: no model found`));
    await assert.rejects(ModelRegistry.load(join(root, 'missing')), /models directory not found/);
  });
});
