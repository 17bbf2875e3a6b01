/**
 * The smaller request problems of issue #20 (point 5): bounds on `length_penalty`, the unit of the
 * text limit, texts of invisible characters only, strict caption bodies and forms, echoes of huge
 * model names, and cross-site POSTs and framing.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startServer, type RunningServer } from '../serve/server.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';

let root: string;
let server: RunningServer;

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-request-limits-'));
  await writeTinyModelDir(join(root, 'models', 'tiny'));
  await mkdir(join(root, 'reports', 'r'), { recursive: true });
  await writeFile(join(root, 'reports', 'r', 'report.html'), '<p>r</p>');
  server = await startServer({
    modelsDir: join(root, 'models'),
    port: 0,
    intraOpNumThreads: 1,
    workers: 1,
    limits: { maxTextChars: 10 },
    reportsDir: join(root, 'reports'),
    allowedOrigins: ['https://app.example.com'],
    log: () => undefined,
  });
});

after(async () => {
  await server?.close();
  await rm(root, { recursive: true, force: true });
});

interface Answer {
  status: number;
  text: string;
  body: { code?: string; message?: string; translations?: Array<{ score: number | null }> };
}

async function send(path: string, body: string | FormData, headers: Record<string, string> = {}): Promise<Answer> {
  const res = await fetch(`${server.url}${path}`, { method: 'POST', body, headers });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as Answer['body'] };
}
const translate = (body: unknown, headers: Record<string, string> = {}) =>
  send('/v1/translate', JSON.stringify(body), { 'content-type': 'application/json', ...headers });

function assertRefused(a: Answer, status: number, code: string, message?: RegExp): void {
  assert.equal(a.status, status, a.text);
  assert.equal(a.body.code, code, a.text);
  if (message) assert.match(a.body.message ?? '', message);
}

/** A form with a (not decodable) image file and the given fields, in order. */
function form(fields: Array<[string, string]>): FormData {
  const body = new FormData();
  body.append('image', new Blob([new Uint8Array([0x89, 0x50, 0x4e, 0x47])]), 'x.png');
  for (const [k, v] of fields) body.append(k, v);
  return body;
}

describe('translate bodies', () => {
  test('length_penalty is bounded, so no score overflows to null', async () => {
    for (const lp of [1e308, -1e308, 11])
      assertRefused(
        await translate({ text: 'a man .', length_penalty: lp }),
        400,
        'FROST_ERR_INVALID_REQUEST',
        /length_penalty/,
      );
    for (const lp of [10, -10, 0.6]) {
      const a = await translate({ text: 'a man .', length_penalty: lp, beam: 2 });
      assert.equal(a.status, 200, a.text);
      assert.equal(typeof a.body.translations![0]!.score, 'number', `length_penalty ${lp}: ${a.text}`);
    }
  });

  test('the text limit counts code points, and says so', async () => {
    const emoji = '\u{1F600}';
    assert.equal(emoji.length, 2, 'one code point, two UTF-16 units');
    assert.equal((await translate({ text: emoji.repeat(10) })).status, 200, 'ten emoji are ten characters');
    assertRefused(
      await translate({ text: emoji.repeat(11) }),
      400,
      'FROST_ERR_INVALID_REQUEST',
      /text: must be at most 10 characters \(code points\)/,
    );
    const openapi = await (await fetch(`${server.url}/openapi.json`)).text();
    assert.match(openapi, /"maxLength":10/, 'JSON Schema maxLength (code points) states the same limit');
  });

  test('a text of only invisible characters is refused', async () => {
    for (const text of ['\u200b\u200d\ufeff', ' \u2060 \u00ad ', '\u200e\u200f']) {
      assertRefused(
        await translate({ text }),
        400,
        'FROST_ERR_INVALID_REQUEST',
        /must be a non-empty string \(spaces and zero-width characters do not count\)/,
      );
    }
    assert.equal((await translate({ text: 'a\u200bman' })).status, 200);
  });

  test('a huge unknown key is not echoed whole (issue #51, 8)', async () => {
    const a = await translate({ text: 'a man .', ['k'.repeat(900_000)]: 1, colour: 'red' });
    assertRefused(a, 400, 'FROST_ERR_INVALID_REQUEST', /unknown keys 'k{64}… \(900000 characters\)', 'colour'/);
    assert.ok(a.text.length < 1000, `answer of ${a.text.length} characters`);
  });

  test('a huge unknown model name is not echoed whole', async () => {
    const name = 'm'.repeat(100_000);
    const a = await translate({ model: name, text: 'a man .' });
    assertRefused(a, 400, 'FROST_ERR_INVALID_REQUEST', /model: must be at most 128 characters/);
    assert.ok(a.text.length < 1000, `answer of ${a.text.length} characters`);
    const b = await fetch(`${server.url}/v1/models/${'m'.repeat(8000)}/files/model-card.json`);
    const text = await b.text();
    assert.equal(b.status, 404);
    assert.ok(text.length < 1000, `answer of ${text.length} characters`);
    assert.match(text, /8000 characters/);
  });
});

describe('caption bodies', () => {
  test("the JSON body is strict, as translate's is", async () => {
    const a = await send('/v1/caption', JSON.stringify({ image: 'iVBORw0KGgo=', beam: 2, extra: 1 }), {
      'content-type': 'application/json',
    });
    assertRefused(a, 400, 'FROST_ERR_INVALID_REQUEST', /extra/);
  });

  test('form fields: beam in decimal only, no unknown fields, no more than 10 parts', async () => {
    for (const beam of ['0x10', '1e1', ' 4', '4.0'])
      assertRefused(
        await send('/v1/caption', form([['beam', beam]])),
        400,
        'FROST_ERR_INVALID_REQUEST',
        /beam: must be an integer from 1 to 16/,
      );
    assertRefused(
      await send('/v1/caption', form([['colour', 'red']])),
      400,
      'FROST_ERR_INVALID_REQUEST',
      /unknown field 'colour'/,
    );
    const many = form(Array.from({ length: 11 }, (): [string, string] => ['model', 'tiny-en-de']));
    assertRefused(await send('/v1/caption', many), 400, 'FROST_ERR_INVALID_REQUEST', /more than 10/);
    const a = await send('/v1/caption', form([['model', 'm'.repeat(5000)]]));
    assertRefused(a, 400, 'FROST_ERR_INVALID_REQUEST', /model: must be at most 128 characters/);
    assert.ok(a.text.length < 1000);
  });
});

describe('cross-site requests and framing', () => {
  test("a POST from another site is refused with 403; the server's own page, allowed origins and non-browsers pass", async () => {
    const body = { text: 'a man .' };
    assertRefused(
      await translate(body, { origin: 'https://evil.example' }),
      403,
      'FROST_ERR_CROSS_ORIGIN',
      /evil\.example/,
    );
    assertRefused(await translate(body, { origin: 'null' }), 403, 'FROST_ERR_CROSS_ORIGIN');
    assertRefused(await translate(body, { 'sec-fetch-site': 'cross-site' }), 403, 'FROST_ERR_CROSS_ORIGIN');
    assertRefused(
      await send('/v1/caption', form([]), { origin: 'https://evil.example' }),
      403,
      'FROST_ERR_CROSS_ORIGIN',
    );
    const own = new URL(server.url).origin;
    assert.equal((await translate(body, { origin: own })).status, 200);
    assert.equal((await translate(body, { origin: 'https://app.example.com' })).status, 200);
    assert.equal((await translate(body)).status, 200);
  });

  test('the reports carry a CSP and X-Frame-Options', async () => {
    const res = await fetch(`${server.url}/reports/r/`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-security-policy') ?? '', /frame-ancestors 'self'/);
    assert.equal(res.headers.get('x-frame-options'), 'SAMEORIGIN');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  });
});
