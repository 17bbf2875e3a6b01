/**
 * Slow and many clients (issue #20, points 2 and 5): a body that never ends is dropped once the
 * request timeout has passed, connections past `maxConnections` are refused while the ones held
 * still work, shutdown drops stalled uploads instead of waiting out its drain, and a request that
 * arrives on an open connection as shutdown begins is answered 503 rather than reset.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { startServer, type RunningServer } from '../serve/server.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';

let root: string;
const logLines: string[] = [];

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-connections-'));
  await writeTinyModelDir(join(root, 'models', 'tiny'));
});

after(async () => {
  await rm(root, { recursive: true, force: true });
});

interface StartOptions {
  timeoutMs?: number;
  maxConnections?: number;
  drainTimeoutMs?: number;
}

async function start(opts: StartOptions = {}): Promise<RunningServer> {
  return startServer({
    modelsDir: join(root, 'models'),
    port: 0,
    intraOpNumThreads: 1,
    workers: 1,
    limits: opts.timeoutMs === undefined ? undefined : { timeoutMs: opts.timeoutMs },
    maxConnections: opts.maxConnections,
    drainTimeoutMs: opts.drainTimeoutMs,
    log: (line) => logLines.push(line),
  });
}

/** A socket to the server, with what it has received and a promise of its end. */
async function open(url: string): Promise<{ socket: Socket; received: () => string; closed: Promise<number> }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let data = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (data += chunk));
  socket.on('error', () => undefined);
  const closed = new Promise<number>((resolve) => socket.once('close', () => resolve(performance.now())));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return { socket, received: () => data, closed };
}

/** Starts a chunked JSON POST whose body never ends. */
function stallBody(socket: Socket, path = '/v1/translate'): void {
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"tex\r\n`,
  );
}

test('a body that never ends is dropped within timeoutMs + 1 s', { timeout: 15_000 }, async () => {
  const server = await start({ timeoutMs: 1000 });
  try {
    const c = await open(server.url);
    const t0 = performance.now();
    stallBody(c.socket);
    const ms = (await c.closed) - t0;
    assert.ok(ms < 2000, `dropped after ${ms.toFixed(0)} ms`);
    assert.match(c.received(), /^HTTP\/1\.1 408/, 'answered 408 Request Timeout');
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200);
  } finally {
    await server.close();
  }
});

test('connections past maxConnections are refused; those held still work', { timeout: 15_000 }, async () => {
  const server = await start({ maxConnections: 3 });
  try {
    const held = await Promise.all([open(server.url), open(server.url), open(server.url)]);
    const extra = await open(server.url);
    extra.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    await extra.closed;
    assert.doesNotMatch(extra.received(), /200 OK/, 'the fourth connection is not served');
    held[0]!.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    await held[0]!.closed;
    assert.match(held[0]!.received(), /^HTTP\/1\.1 200/);
    for (const h of held) h.socket.destroy();
    await Promise.all(held.map((h) => h.closed));
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200, 'a free slot serves again');
  } finally {
    await server.close();
  }
});

test('shutdown drops a stalled upload and idle connections within a second or so', { timeout: 15_000 }, async () => {
  const server = await start({ timeoutMs: 60_000, drainTimeoutMs: 30_000 });
  const stalled = await open(server.url);
  stallBody(stalled.socket);
  const idle = await open(server.url);
  await new Promise((resolve) => setTimeout(resolve, 100));
  const t0 = performance.now();
  await server.close();
  const ms = performance.now() - t0;
  assert.ok(ms < 3000, `close took ${ms.toFixed(0)} ms with a stalled upload`);
  await Promise.all([stalled.closed, idle.closed]);
  const stopped = logLines.map((l) => JSON.parse(l) as { msg: string; level: number }).filter((l) => l.level >= 50);
  assert.deepEqual(stopped, [], 'nothing logged at error level');
});

test(
  'a request arriving on an open connection as shutdown begins is answered 503 with Retry-After, not reset',
  { timeout: 15_000 },
  async () => {
    const server = await start();
    const c = await open(server.url);
    c.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    while (!/\r\n\r\n[\s\S]*ok/.test(c.received())) await new Promise((resolve) => setTimeout(resolve, 10));
    const answered = c.received().length;
    const closing = server.close();
    const body = JSON.stringify({ text: 'a man runs .' });
    c.socket.write(
      `POST /v1/translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
    );
    await c.closed;
    const reply = c.received().slice(answered);
    assert.match(reply, /^HTTP\/1\.1 503 /, reply);
    assert.match(reply, /\r\nretry-after: 1\r\n/i);
    assert.match(reply, /\r\nconnection: close\r\n/i);
    assert.match(reply, /"code":"FROST_ERR_NOT_READY"/);
    await closing;
  },
);
