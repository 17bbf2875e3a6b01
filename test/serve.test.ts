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

async function call(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
  base = server.url,
): Promise<Answer> {
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
    assert.deepEqual(a.body.translations[0], {
      text: expected.text,
      score: expected.score,
      log_prob: expected.logProb,
    });
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
    assert.match(
      assertError(await translate({ text: '' }), 400, 'FROST_ERR_INVALID_REQUEST'),
      /text: must be a non-empty string/,
    );
    assert.match(
      assertError(await translate({ texts: ['a dog', '   '] }), 400, 'FROST_ERR_INVALID_REQUEST'),
      /texts\.1: must be a non-empty string/,
    );
    assert.match(
      assertError(await translate({ texts: [] }), 400, 'FROST_ERR_INVALID_REQUEST'),
      /texts: must hold at least one text/,
    );
  });

  test('a 100 kB text → 400 with the reason', async () => {
    const message = assertError(await translate({ text: 'a dog '.repeat(17_000) }), 400, 'FROST_ERR_INVALID_REQUEST');
    assert.match(message, /text: must be at most 1000 characters/);
  });

  test('too many texts → 400', async () => {
    const texts = Array.from({ length: 33 }, () => 'a dog');
    assert.match(
      assertError(await translate({ texts }), 400, 'FROST_ERR_INVALID_REQUEST'),
      /texts: must hold at most 32 texts/,
    );
  });

  test('unknown model → 404 listing the available ones', async () => {
    const message = assertError(await translate({ model: 'nope', text: 'a dog' }), 404, 'FROST_ERR_UNKNOWN_MODEL');
    assert.match(message, /'nope'.*available: tiny-en-de/);
  });

  test('wrong types → 400 naming the field', async () => {
    assert.match(
      assertError(await translate({ text: 'a dog', beam: '5' }), 400, 'FROST_ERR_INVALID_REQUEST'),
      /beam: .*expected number/,
    );
    assert.match(
      assertError(await translate({ text: 'a dog', beam: 2.5 }), 400, 'FROST_ERR_INVALID_REQUEST'),
      /beam: .*int/,
    );
    assert.match(assertError(await translate({ text: 'a dog', beam: 17 }), 400, 'FROST_ERR_INVALID_REQUEST'), /beam: /);
    assert.match(
      assertError(await translate({ texts: ['a dog', 7] }), 400, 'FROST_ERR_INVALID_REQUEST'),
      /texts\.1: .*expected string/,
    );
    assert.match(
      assertError(await translate({ text: 'a dog', max_len: 0 }), 400, 'FROST_ERR_INVALID_REQUEST'),
      /max_len: /,
    );
    assert.match(
      assertError(await translate({ text: 'a dog', beam: 2, n_best: 3 }), 400, 'FROST_ERR_INVALID_REQUEST'),
      /n_best: must be <= beam/,
    );
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

  test('one JSON log line per request: request id, method, path, status, ms', async () => {
    const before = logLines.length;
    await call('GET', '/healthz?probe=1', undefined, { 'x-request-id': 'probe-1' });
    await translate({ text: '' });
    const lines = logLines
      .slice(before)
      .map((l) => JSON.parse(l))
      .filter((l) => l.msg === 'request');
    assert.equal(lines.length, 2, JSON.stringify(lines));
    assert.deepEqual(
      { reqId: lines[0].reqId, method: lines[0].method, path: lines[0].path, status: lines[0].status },
      { reqId: 'probe-1', method: 'GET', path: '/healthz', status: 200 },
    );
    assert.equal(typeof lines[0].ms, 'number');
    assert.equal(lines[1].status, 400);
    assert.equal(lines[1].code, 'FROST_ERR_INVALID_REQUEST');
    assert.match(lines[1].reqId, /^[0-9a-f-]{36}$/);
  });

  test('x-request-id is echoed, or generated, and errors carry it', async () => {
    const echoed = await fetch(`${server.url}/healthz`, { headers: { 'x-request-id': 'abc-123' } });
    assert.equal(echoed.headers.get('x-request-id'), 'abc-123');
    const bad = await fetch(`${server.url}/healthz`, { headers: { 'x-request-id': 'has spaces\tand tabs' } });
    assert.match(bad.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    const res = await fetch(`${server.url}/v1/translate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'req-9' },
      body: '{',
    });
    assert.equal(((await res.json()) as { request_id: string }).request_id, 'req-9');
  });

  test('GET /readyz lists the loaded models', async () => {
    const a = await call('GET', '/readyz');
    assert.equal(a.status, 200);
    assert.deepEqual(a.body, { status: 'ready', models: ['tiny-en-de'] });
  });

  test('GET /openapi.json is an OpenAPI 3.1 document with every route', async () => {
    const a = await call('GET', '/openapi.json');
    assert.equal(a.status, 200);
    assert.equal(a.body.openapi, '3.1.0');
    for (const path of ['/v1/translate', '/v1/models', '/healthz', '/readyz', '/metrics', '/openapi.json'])
      assert.ok(a.body.paths[path], path);
    const req = a.body.components.schemas.TranslateRequest;
    assert.equal(req.properties.texts.maxItems, 32);
    assert.equal(req.properties.beam.maximum, 16);
    assert.ok(a.body.components.schemas.Error.properties.code.enum.includes('FROST_ERR_OVERLOADED'));
  });

  test('GET /metrics exposes latency, batch size, queue depth, tokens and errors', async () => {
    await translate({ texts: ['a dog', 'a cat runs'] });
    await translate({ text: 5 });
    const res = await fetch(`${server.url}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
    const text = await res.text();
    assert.match(text, /frost_request_duration_seconds_bucket\{.*route="\/v1\/translate".*status="200"/);
    assert.match(text, /frost_batch_size_count\{model="tiny-en-de"\} [1-9]/);
    assert.match(text, /frost_queue_depth\{model="tiny-en-de"\} 0/);
    assert.match(text, /frost_generated_tokens_total\{model="tiny-en-de"\} [1-9]/);
    assert.match(text, /frost_errors_total\{code="FROST_ERR_INVALID_REQUEST"\} [1-9]/);
    assert.match(text, /frost_process_resident_memory_bytes/);
  });
});

describe('more malformed requests', () => {
  test('a body that is not valid UTF-8 → 400 FROST_ERR_BAD_ENCODING', async () => {
    const body = Buffer.concat([Buffer.from('{"text": "a '), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from(' dog"}')]);
    const res = await fetch(`${server.url}/v1/translate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    assertError({ status: res.status, body: await res.json() }, 400, 'FROST_ERR_BAD_ENCODING');
  });

  test('a non-UTF-8 charset → 415', async () => {
    const a = await call('POST', '/v1/translate', '{"text": "a dog"}', {
      'content-type': 'application/json; charset=latin1',
    });
    assertError(a, 415, 'FROST_ERR_UNSUPPORTED_MEDIA_TYPE');
  });
});

describe('POST /v1/translate?stream=1', () => {
  const streamed = async (body: unknown) => {
    const res = await fetch(`${server.url}/v1/translate?stream=1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream/);
    const events = parseSse(await res.text());
    assert.equal(events.filter((e) => e.event === 'result').length, 1);
    assert.equal(events.at(-1)?.event, 'result', 'the result comes last');
    return {
      prefixes: events.filter((e) => e.event === 'prefix').map((e) => e.data as { index: number; text: string }),
      result: events.at(-1)!.data as { translations: Array<{ text: string; score: number }> },
    };
  };
  const TEXT = 'The red dog sits on a big house and the small cat sits.';

  test('greedy: server-sent prefixes grow step by step and end in the full translation', async () => {
    const { prefixes, result } = await streamed({ text: TEXT });
    const [expected] = await direct.translate([TEXT]);
    assert.equal(result.translations[0].text, expected.text);
    assert.ok(prefixes.length >= 3, `${prefixes.length} prefix events`);
    for (let i = 1; i < prefixes.length; i++) {
      assert.equal(prefixes[i].index, 0);
      assert.ok(
        prefixes[i].text.startsWith(prefixes[i - 1].text) && prefixes[i].text !== prefixes[i - 1].text,
        JSON.stringify(prefixes.slice(i - 1, i + 1)),
      );
    }
    assert.equal(prefixes.at(-1)!.text, expected.text);
  });

  test('beam and several texts: each text streams its prefixes, the last one its translation', async () => {
    const texts = [TEXT, 'a man runs .'];
    const { prefixes, result } = await streamed({ texts, beam: 3 });
    const expected = await direct.translate(texts, { beam: 3 });
    assert.deepEqual(
      result.translations.map((t) => t.text),
      expected.map((t) => t.text),
    );
    for (const index of [0, 1]) {
      const mine = prefixes.filter((p) => p.index === index);
      assert.ok(mine.length >= 2, `text ${index}: ${mine.length} prefix events`);
      assert.equal(mine.at(-1)!.text, expected[index].text);
    }
  });

  test('errors before decoding are plain JSON', async () => {
    const a = await call('POST', '/v1/translate?stream=1', { text: '' });
    assertError(a, 400, 'FROST_ERR_INVALID_REQUEST');
  });
});

/** Parses an event-stream body into its events. */
function parseSse(body: string): Array<{ event: string; data: unknown }> {
  return body
    .split('\n\n')
    .filter((block) => block.trim())
    .map((block) => {
      const lines = block.split('\n');
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7) ?? 'message';
      const data = lines
        .filter((l) => l.startsWith('data: '))
        .map((l) => l.slice(6))
        .join('\n');
      return { event, data: JSON.parse(data) };
    });
}

describe('ModelRegistry', () => {
  test('several models: requests must name one unless a default is set', async () => {
    const models = [
      { name: 'a', runtime: direct },
      { name: 'b', runtime: direct },
    ];
    const noDefault = new ModelRegistry(models);
    assert.throws(
      () => noDefault.get(undefined),
      (err: Error & { code?: string }) => err.code === 'FROST_ERR_NO_DEFAULT_MODEL' && /a, b/.test(err.message),
    );
    assert.equal(new ModelRegistry(models, 'b').get(undefined).name, 'b');
    assert.throws(() => new ModelRegistry(models, 'c'), /--default-model 'c' is not a loaded model; loaded: a, b/);
    assert.throws(() => new ModelRegistry([...models, { name: 'a', runtime: direct }]), /two models are named 'a'/);
  });

  test('loading a directory without models names it', async () => {
    await assert.rejects(ModelRegistry.load(root), (err: Error) => err.message.startsWith(`${root}: no model found`));
    await assert.rejects(ModelRegistry.load(join(root, 'missing')), /models directory not found/);
  });
});
