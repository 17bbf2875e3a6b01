/**
 * Decoding in worker threads: the event loop answers health checks between two decoder steps of a
 * long batch, a crashed thread fails its requests with a JSON 500 and is replaced, several threads
 * share the batches, and a model that cannot load is reported from inside its thread by file name.
 *
 * The model is the tiny test model made wide (hidden 512), so one decoder step of a big beam batch
 * is long next to an HTTP round trip; the tests order events and never compare durations.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadModelDir } from '../core/runtime/load-node.ts';
import { startServer, type RunningServer } from '../serve/server.ts';
import { WorkerRuntime } from '../serve/worker-runtime.ts';
import { TINY_SOURCE_WORDS, writeTinyModelDir } from './helpers/tiny-model.ts';

let root: string;
let wideDir: string;
const servers: RunningServer[] = [];

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-serve-workers-'));
  wideDir = await writeTinyModelDir(join(root, 'wide'), { hidden: 512 });
});

after(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await rm(root, { recursive: true, force: true });
});

async function serve(workers: number, log: (line: string) => void = () => {}): Promise<RunningServer> {
  const server = await startServer({ modelsDir: wideDir, port: 0, intraOpNumThreads: 1, workers, log });
  servers.push(server);
  return server;
}

/** 32 texts of 30 words at beam 16: 512 rows per decoder step, about 20 steps. */
const LONG_BATCH = {
  texts: Array.from({ length: 32 }, (_, i) => {
    let s = i + 1;
    return Array.from(
      { length: 30 },
      () => TINY_SOURCE_WORDS[(s = (s * 16807) % 2147483647) % TINY_SOURCE_WORDS.length],
    ).join(' ');
  }),
  beam: 16,
  max_len: 20,
};

interface SseEvent {
  event: string;
  data: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON under test
}

/** POSTs a `?stream=1` translation and calls `onEvent` for each event as it arrives. */
async function stream(url: string, body: unknown, onEvent: (e: SseEvent) => void): Promise<void> {
  const res = await fetch(`${url}/v1/translate?stream=1`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 200);
  const decoder = new TextDecoder();
  let buffered = '';
  const reader = res.body!.getReader();
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
    buffered += decoder.decode(chunk.value, { stream: true });
    let end: number;
    while ((end = buffered.indexOf('\n\n')) >= 0) {
      const lines = buffered.slice(0, end).split('\n');
      buffered = buffered.slice(end + 2);
      const event = lines.find((l) => l.startsWith('event: '))?.slice(7) ?? 'message';
      onEvent({ event, data: JSON.parse(lines.find((l) => l.startsWith('data: '))!.slice(6)) });
    }
  }
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

async function metricsText(server: RunningServer): Promise<string> {
  return (await fetch(`${server.url}/metrics`)).text();
}

describe('decoding in worker threads', () => {
  test('/healthz answers between two decoder steps of a long batch', async () => {
    const server = await serve(1);
    const events: string[] = [];
    const decoding = stream(server.url, LONG_BATCH, (e) => events.push(e.event));
    await until(() => events.includes('prefix'));
    while (!events.includes('result')) {
      const res = await fetch(`${server.url}/healthz`);
      assert.equal(res.status, 200);
      await res.arrayBuffer();
      if (!events.includes('result')) events.push('healthz');
    }
    await decoding;
    assert.equal(events.at(-1), 'result');
    // A decoder step on the event loop would hold every probe until the step ends: at most one
    // probe could be answered between two steps. Off the loop, several are.
    const probesBetweenSteps = events
      .join(' ')
      .split(/prefix(?: prefix)*/)
      .slice(1, -1)
      .map((run) => run.split(' ').filter((e) => e === 'healthz').length);
    assert.ok(
      Math.max(...probesBetweenSteps) >= 3,
      `probes answered between consecutive prefix events: ${probesBetweenSteps.join(',')}`,
    );
  });

  test('a crashed thread fails its requests with a JSON 500 and is replaced; the server keeps serving', async () => {
    const logLines: string[] = [];
    const server = await serve(1, (line) => logLines.push(line));
    const plain = fetch(`${server.url}/v1/translate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(LONG_BATCH),
    });
    const events: SseEvent[] = [];
    const streamed = stream(server.url, LONG_BATCH, (e) => events.push(e));
    await until(() => events.some((e) => e.event === 'prefix'));

    const runtime = server.registry.get(undefined).runtime;
    assert.ok(runtime instanceof WorkerRuntime);
    const [thread] = runtime.threads;
    // Both requests are decoding in the thread (each needs many more steps than one). A message
    // the thread does not understand makes it throw and die, as any uncaught error would.
    // (Worker.terminate() is no way to crash it: stopping a thread inside onnxruntime's native
    // run aborts the whole process.)
    await until(() => thread.inFlight === 2);
    thread.worker.postMessage({ type: 'no-such-message' });

    const res = await plain;
    assert.equal(res.status, 500);
    const body = (await res.json()) as { code: string; message: string; statusCode: number };
    assert.equal(body.code, 'FROST_ERR_DECODER_CRASHED');
    assert.equal(body.statusCode, 500);
    assert.match(body.message, /'tiny-en-de'/);
    await streamed;
    assert.equal(events.at(-1)?.event, 'error');
    assert.equal(events.at(-1)?.data.code, 'FROST_ERR_DECODER_CRASHED');
    assert.equal((await fetch(`${server.url}/healthz`)).status, 200);

    // The next request waits for the replacement thread and is answered by it.
    const text = 'a red dog runs on the house';
    const again = await fetch(`${server.url}/v1/translate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ text }),
    });
    assert.equal(again.status, 200);
    const direct = await loadModelDir(wideDir, { intraOpNumThreads: 1 });
    const [expected] = await direct.translate([text]);
    await direct.release();
    assert.equal(
      ((await again.json()) as { translations: Array<{ text: string }> }).translations[0].text,
      expected.text,
    );
    assert.notEqual(runtime.threads[0], thread);

    const metrics = await metricsText(server);
    assert.match(metrics, /^frost_decode_thread_crashes_total\{model="tiny-en-de"\} 1$/m);
    assert.match(metrics, /^frost_decode_threads\{model="tiny-en-de"\} 1$/m);
    assert.match(metrics, /^frost_errors_total\{code="FROST_ERR_DECODER_CRASHED"\} 2$/m);
    const logged = logLines.map((l) => JSON.parse(l) as { msg: string; reason?: string });
    assert.ok(
      logged.some(
        (l) =>
          l.msg.startsWith('decode thread crashed') && /unknown message type 'no-such-message'/.test(l.reason ?? ''),
      ),
      logLines.join('\n'),
    );
    assert.ok(logged.some((l) => l.msg === 'decode thread restarted'));
  });

  test('the graphs are read once and shared: a thread restarted after a crash decodes even with the file gone bad', async () => {
    const dir = await writeTinyModelDir(join(root, 'shared-graphs'));
    const runtime = await WorkerRuntime.start(dir, { workers: 1, intraOpNumThreads: 1 });
    try {
      const text = 'a red dog runs on the house';
      const [before] = await runtime.translateEach([text]);
      // The decoder on disk is no graph any more: a thread that read it now could not start.
      await writeFile(join(dir, 'decoder.onnx'), 'not a graph');
      const [thread] = runtime.threads;
      thread!.worker.postMessage({ type: 'no-such-message' });
      // Its replacement starts from the shared graphs; one that read the file again would fail, and retry, for ever.
      for (let i = 0; i < 200 && !(runtime.threads[0] !== undefined && runtime.threads[0] !== thread); i++)
        await new Promise((r) => setTimeout(r, 50));
      assert.notEqual(runtime.threads[0], undefined, 'no thread replaced the crashed one within 10 s');
      assert.notEqual(runtime.threads[0], thread);
      for (let i = 0; i < 4; i++) {
        const [again] = await runtime.translateEach([text]);
        assert.equal(again!.text, before!.text);
      }
    } finally {
      await runtime.release();
    }
  });

  test('with two threads, two batches in flight decode one in each', async () => {
    const server = await serve(2);
    const runtime = server.registry.get(undefined).runtime;
    assert.ok(runtime instanceof WorkerRuntime);
    assert.equal(runtime.threads.length, 2);
    const ids = new Set(runtime.threads.map((t) => t.worker.threadId));
    assert.equal(ids.size, 2);
    const seen: boolean[] = [false, false];
    const decoding = [0, 1].map((i) => stream(server.url, LONG_BATCH, (e) => (seen[i] ||= e.event === 'prefix')));
    await until(() => seen[0] && seen[1]);
    assert.deepEqual(
      runtime.threads.map((t) => t.inFlight),
      [1, 1],
    );
    await Promise.all(decoding);
    assert.match(await metricsText(server), /^frost_decode_threads\{model="tiny-en-de"\} 2$/m);
  });

  test('a model that fails to load in its thread is reported by its file', async () => {
    const dir = await writeTinyModelDir(join(root, 'corrupt'));
    const size = (await readFile(join(dir, 'decoder.onnx'))).length;
    await writeFile(join(dir, 'decoder.onnx'), Buffer.alloc(size, 7));
    await assert.rejects(
      startServer({ modelsDir: dir, port: 0, workers: 2, log: () => {} }),
      (err: Error) =>
        err.message.includes(join(dir, 'decoder.onnx')) && /not a loadable ONNX decoder graph/.test(err.message),
    );
    await assert.rejects(WorkerRuntime.start(dir, { workers: 0 }), /workers must be an integer >= 1, got 0/);
  });
});
