/**
 * The decoding routes' answers (serve/json-response.ts, written without express's res.json) and the UTF-8 check
 * of JSON bodies (serve/json-body.ts): byte-exact Content-Length for text beyond ASCII, the headers set before
 * kept, no ETag on a POST answer, and every kind of invalid UTF-8 still refused.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { createApp } from '../serve/app.ts';
import { InProcessRuntime } from '../serve/in-process-runtime.ts';
import { sendJson } from '../serve/json-response.ts';
import { ModelRegistry } from '../serve/model-registry.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';

interface Raw {
  status: number;
  headers: IncomingHttpHeaders;
  bytes: Buffer;
}

/** One request with node:http, the answer's bytes as they came (fetch would hide a wrong Content-Length). */
function raw(url: string, method: string, body?: Buffer, headers: Record<string, string> = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: { connection: 'close', ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('sendJson', () => {
  const body = { text: 'Zwei Männer fahren – schnell 🚲', score: -1.25, list: [1, 2] };
  let server: Server;
  let base: string;

  before(async () => {
    server = createServer((_req, res) => {
      res.setHeader('X-Request-Id', 'abc-1');
      sendJson(res, body, 201);
    });
    base = await listen(server);
  });
  after(() => new Promise((resolve) => server.close(resolve)));

  test('Content-Length counts bytes, not characters; status, type and earlier headers are kept', async () => {
    const a = await raw(base, 'POST');
    assert.equal(a.status, 201);
    assert.equal(a.headers['content-type'], 'application/json; charset=utf-8');
    assert.equal(Number(a.headers['content-length']), a.bytes.length);
    assert.ok(a.bytes.length > JSON.stringify(body).length, 'the body holds multi-byte characters');
    assert.deepEqual(JSON.parse(a.bytes.toString('utf8')), body);
    assert.equal(a.headers['x-request-id'], 'abc-1');
    assert.equal(a.headers.etag, undefined);
  });
});

describe('POST /v1/translate answers and bodies', () => {
  let root: string;
  let runtime: InProcessRuntime;
  let server: Server;
  let base: string;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'frost-json-response-'));
    runtime = await InProcessRuntime.load(await writeTinyModelDir(join(root, 'tiny')), { intraOpNumThreads: 1 });
    server = createServer(createApp({ registry: new ModelRegistry([{ name: runtime.card.name, runtime }]) }));
    base = await listen(server);
  });
  after(async () => {
    await new Promise((resolve) => server.close(resolve));
    await runtime.release();
    await rm(root, { recursive: true, force: true });
  });

  const post = (body: Buffer, headers: Record<string, string> = {}) =>
    raw(`${base}/v1/translate`, 'POST', body, { 'content-type': 'application/json', ...headers });

  test('the answer: exact Content-Length, JSON, the request id echoed, no ETag, same as in-process', async () => {
    const text = 'The red dog sits on a big house.';
    const a = await post(Buffer.from(JSON.stringify({ text })), { 'x-request-id': 'req-42' });
    assert.equal(a.status, 200, a.bytes.toString());
    assert.equal(Number(a.headers['content-length']), a.bytes.length);
    assert.match(a.headers['content-type'] ?? '', /^application\/json; charset=utf-8$/);
    assert.equal(a.headers['x-request-id'], 'req-42');
    assert.equal(a.headers.etag, undefined);
    const answer = JSON.parse(a.bytes.toString('utf8')) as { translations: { text: string }[]; timing: object };
    const [expected] = await runtime.translateEach([text]);
    assert.equal(answer.translations[0].text, expected.text);
    assert.equal(typeof (answer.timing as { total_ms: unknown }).total_ms, 'number');
  });

  test('text beyond ASCII (a 4-byte character, a byte-order mark) is read', async () => {
    const json = Buffer.from(JSON.stringify({ text: 'a dog runs 🚲 fährt' }));
    assert.equal((await post(json)).status, 200);
    assert.equal((await post(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), json]))).status, 200);
  });

  // Each is a way a lenient decoder lets bytes through: an overlong '/', a UTF-16 surrogate, a code point past
  // U+10FFFF, a sequence cut short at the end, a stray continuation byte.
  const invalid: Record<string, number[]> = {
    'overlong encoding': [0xc0, 0xaf],
    'surrogate half': [0xed, 0xa0, 0x80],
    'beyond U+10FFFF': [0xf4, 0x90, 0x80, 0x80],
    'truncated sequence': [0xe2, 0x82],
    'lone continuation byte': [0x80],
  };
  for (const [name, bytes] of Object.entries(invalid)) {
    test(`invalid UTF-8 (${name}) → 400 FROST_ERR_BAD_ENCODING`, async () => {
      const body = Buffer.concat([Buffer.from('{"text": "a dog '), Buffer.from(bytes), Buffer.from('"}')]);
      const a = await post(body);
      assert.equal(a.status, 400, a.bytes.toString());
      assert.equal((JSON.parse(a.bytes.toString('utf8')) as { code: string }).code, 'FROST_ERR_BAD_ENCODING');
    });
  }
});
