/**
 * Bodies that cannot be read (issue #20, point 4): an unknown Content-Encoding, gzip or brotli that
 * does not decompress, and a client that hangs up mid-body are the client's errors: a 4xx (or, for
 * the client that left, a quiet info line), never a 500 with a stack in the log.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { startServer, type RunningServer } from '../serve/server.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';

let root: string;
let server: RunningServer;
const logLines: string[] = [];

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-body-errors-'));
  await writeTinyModelDir(join(root, 'models', 'tiny'));
  server = await startServer({
    modelsDir: join(root, 'models'),
    port: 0,
    intraOpNumThreads: 1,
    workers: 1,
    log: (line) => logLines.push(line),
  });
});

after(async () => {
  await server?.close();
  await rm(root, { recursive: true, force: true });
});

interface LogLine {
  level: number;
  msg: string;
  code?: string;
  err?: unknown;
}
const logged = (): LogLine[] => logLines.map((l) => JSON.parse(l) as LogLine);

async function post(path: string, body: string | FormData | Blob, headers: Record<string, string>) {
  const res = await fetch(`${server.url}${path}`, { method: 'POST', body, headers });
  return { status: res.status, body: (await res.json()) as { code: string; message: string } };
}

test('Content-Encoding errors are 4xx with a code, and nothing is logged at error level', async () => {
  const json = { 'content-type': 'application/json' };
  const unknown = await post('/v1/translate', '{"text":"a man runs ."}', { ...json, 'content-encoding': 'foo' });
  assert.equal(unknown.status, 415, JSON.stringify(unknown.body));
  assert.equal(unknown.body.code, 'FROST_ERR_UNSUPPORTED_ENCODING');
  assert.match(unknown.body.message, /"foo"/);

  for (const encoding of ['gzip', 'br', 'deflate']) {
    const bad = await post('/v1/translate', 'this is not compressed', { ...json, 'content-encoding': encoding });
    assert.equal(bad.status, 400, `${encoding}: ${JSON.stringify(bad.body)}`);
    assert.equal(bad.body.code, 'FROST_ERR_BAD_BODY');
    assert.doesNotMatch(bad.body.message, /\n\s+at /);
  }
  const good = await post('/v1/translate', new Blob([new Uint8Array(gzipSync('{"text":"a man runs ."}'))]), {
    ...json,
    'content-encoding': 'gzip',
  });
  assert.equal(good.status, 200, 'a real gzip body is read');

  const form = new FormData();
  form.append('image', new Blob([new Uint8Array([1, 2, 3])]), 'x.png');
  const multipart = await post('/v1/caption', form, { 'content-encoding': 'gzip' });
  assert.equal(multipart.status, 415, JSON.stringify(multipart.body));
  assert.equal(multipart.body.code, 'FROST_ERR_UNSUPPORTED_ENCODING');

  assert.deepEqual(
    logged().filter((l) => l.level >= 50),
    [],
  );
});

test('a client that hangs up mid-body gets a quiet info line, not an error with a stack', async () => {
  const before = logLines.length;
  const { hostname, port } = new URL(server.url);
  for (const path of ['/v1/translate', '/v1/caption']) {
    const socket = connect(Number(port), hostname);
    await new Promise((resolve) => socket.once('connect', resolve));
    const [type, start] =
      path === '/v1/caption'
        ? [
            'multipart/form-data; boundary=xyz',
            '--xyz\r\nContent-Disposition: form-data; name="image"; filename="a.png"\r\n\r\n\x89PNG',
          ]
        : ['application/json', '{"te'];
    socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: ${type}\r\nContent-Length: 1000\r\n\r\n${start}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
    socket.destroy();
  }
  const deadline = Date.now() + 5000;
  while (
    logged()
      .slice(before)
      .filter((l) => l.code === 'FROST_ERR_CLIENT_CLOSED').length < 2 &&
    Date.now() < deadline
  ) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const lines = logged().slice(before);
  assert.equal(
    lines.filter((l) => l.code === 'FROST_ERR_CLIENT_CLOSED' && l.level === 30).length,
    2,
    JSON.stringify(lines),
  );
  assert.deepEqual(
    lines.filter((l) => l.level >= 40),
    [],
  );
  assert.ok(!logLines.slice(before).some((l) => /\\n\s+at /.test(l)), 'no stack trace in the log');
});
