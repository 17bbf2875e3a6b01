/**
 * `POST /v1/complete` and `POST /v1/score` on `frost serve` with a language model exported from a
 * tiny run, beside a translation model: scores equal the tfjs model's log-probability, a seeded
 * completion is reproducible (and an unseeded one says its seed), streaming sends every token, and
 * each bad input is a 400 naming its field.
 */
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs-core';
import { copyFile, cp, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { CompleteResponse, ModelsResponse, ScoreResponse } from '../core/wire.ts';
import { loadLmModelDir } from '../core/runtime/load-lm-node.ts';
import type { Completion, CompletionRequest, LmScore } from '../core/runtime/lm.ts';
import { SPECIALS } from '../core/vocab.ts';
import type { BatchingOptions, BatchObserver, SubmitOptions } from '../serve/batcher.ts';
import { BatcherPool } from '../serve/batcher-pool.ts';
import { QueueFullError } from '../serve/decode-errors.ts';
import { LM_COMPLETE, LM_SCORE } from '../serve/lm-batch-kinds.ts';
import { ModelRegistry, type RegistryLoadOptions } from '../serve/model-registry.ts';
import { startServer, type RunningServer } from '../serve/server.ts';
import { WorkerRuntime } from '../serve/worker-runtime.ts';
import { initBackend } from '../train/backend/select.ts';
import { RunFolder } from '../train/run-folder.ts';
import { copyFixture } from './helpers/cached-fixture.ts';
import { cachedLmModel, SMALL_LM } from './helpers/lm-fixtures.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';

let root: string;
let runDir: string;
let server: RunningServer;

before(async () => {
  await initBackend({ prefer: 'wasm', quiet: true });
  root = await mkdtemp(join(tmpdir(), 'frost-serve-lm-'));
  const lm = await cachedLmModel(SMALL_LM);
  runDir = lm.runDir;
  // Copied beside a translation model: a models folder holds both.
  await copyFixture(lm.modelDir, join(root, 'models', 'lm-tiny'));
  // Other weights under the same name, for the --watch reload.
  const other = await cachedLmModel({ ...SMALL_LM, config: { epochs: 1, seed: 2 } });
  await copyFixture(other.modelDir, join(root, 'other', 'lm-tiny'));
  await writeTinyModelDir(join(root, 'models', 'tiny'), { name: 'tiny' });
  server = await startServer({
    modelsDir: join(root, 'models'),
    port: 0,
    intraOpNumThreads: 1,
    workers: 1,
    limits: { maxTextChars: 40 },
    // A tiny model decodes a lone request in under a millisecond: on a loaded machine the default 5 ms window
    // let 14 concurrent requests each run alone, and the batching test below needs them to meet.
    batching: { maxWaitMs: 50 },
    log: () => undefined,
  });
});

after(async () => {
  await server?.close();
  await rm(root, { recursive: true, force: true });
});

async function post(
  path: string,
  body: unknown,
): Promise<{ status: number; text: string; json: Record<string, unknown> }> {
  const res = await fetch(`${server.url}${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  const text = await res.text();
  return {
    status: res.status,
    text,
    json: path.includes('stream') ? {} : (JSON.parse(text) as Record<string, unknown>),
  };
}

/**
 * The language models under `dir` in one registry, batched through one pool, as `frost serve` holds them;
 * decoded on this thread unless `loader` says otherwise.
 */
async function loadLanguageModels(
  dir: string,
  opts: Pick<RegistryLoadOptions, 'intraOpNumThreads' | 'loader'> & {
    batching?: Partial<BatchingOptions>;
    observer?: (model: string) => BatchObserver;
  } = {},
) {
  const registry = await ModelRegistry.load(dir, { ...opts, family: 'lm' });
  const pool = new BatcherPool(registry, opts.batching, opts.observer && { observer: opts.observer });
  const one = <T>(results: Promise<T[]>) => results.then((r) => r[0]);
  return {
    get: (name: string) => registry.get(name, 'lm'),
    score: (name: string, text: string, sub?: SubmitOptions) => one(pool.for(name, LM_SCORE).submit([text], null, sub)),
    complete: (name: string, request: CompletionRequest, sub?: SubmitOptions) =>
      one(pool.for(name, LM_COMPLETE).submit([request], null, sub)),
    idle: () => pool.idle(),
    async close() {
      await pool.idle();
      await registry.close();
    },
  };
}

describe('the per-model queue', () => {
  test('runs at most `concurrency` batches at once, queues up to `maxQueue`, refuses the rest', async () => {
    const models = await loadLanguageModels(join(root, 'models'), {
      intraOpNumThreads: 1,
      batching: { concurrency: 1, maxQueue: 1 },
    });
    const first = models.score('lm-tiny', 'w1 w2');
    const second = models.score('lm-tiny', 'w3');
    assert.throws(() => models.score('lm-tiny', 'w4'), QueueFullError);
    const [a, b] = await Promise.all([first, second]);
    assert.deepEqual([a.tokens, b.tokens], [['w1', 'w2'], ['w3']]);
    await models.idle();
  });
});

describe('cross-request batching', () => {
  test('a request aborted mid-batch is rejected with its reason and its row dropped; the others finish', async () => {
    let finished = 0;
    const models = await loadLanguageModels(join(root, 'models'), {
      intraOpNumThreads: 1,
      batching: { concurrency: 1, maxWaitMs: 50 },
      observer: () => ({ tokens: () => finished++ }),
    });
    const request = { text: 'w3 w7', maxNewTokens: 40, temperature: 1, seed: 99 };
    const alone = await models.complete('lm-tiny', request);
    finished = 0;
    const gone = new AbortController();
    const first = models.complete('lm-tiny', { text: 'w1', maxNewTokens: 2 });
    const kept = models.complete('lm-tiny', request);
    const aborted = models.complete(
      'lm-tiny',
      { ...request, seed: 5 },
      { signal: gone.signal, onPrefix: () => gone.abort(new Error('client left')) },
    );
    await assert.rejects(aborted, /client left/);
    assert.deepEqual(await kept, alone);
    await first;
    await models.idle();
    assert.equal(finished, 2, 'the aborted row never finished decoding');
    await models.close();
  });

  /** `frost_batch_requests` of the language model: [batches, requests]. */
  async function batchCounts(): Promise<[number, number]> {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const num = (re: RegExp) => Number(text.match(re)?.[1] ?? 0);
    return [
      num(/^frost_batch_requests_count\{model="lm-tiny"\} (\d+)/m),
      num(/^frost_batch_requests_sum\{model="lm-tiny"\} (\d+)/m),
    ];
  }

  test('concurrent seeded completions and scores return what each returns alone, in batches > 1', async () => {
    const completions = Array.from({ length: 10 }, (_, i) => ({
      text: ['w3 w7', 'w1', 'w5 w2 w9 w4', 'w8 w8'][i % 4],
      max_new_tokens: 3 + ((i * 5) % 11),
      ...(i % 3 === 0 ? {} : { temperature: 0.7 + i / 10, seed: 100 + i, ...(i % 2 ? { top_k: 5 } : { top_p: 0.9 }) }),
      ...(i === 4 ? { stop: ['w1'] } : {}),
    }));
    const scores = ['w3 w7 w1', 'w2', 'w9 w9 w4 w1 w6 w2', 'w5 w5'].map((text) => ({ text }));
    const strip = (j: Record<string, unknown>) => ({ ...j, timing: undefined });
    const alone: unknown[] = [];
    for (const c of completions) alone.push(strip((await post('/v1/complete', c)).json));
    for (const s of scores) alone.push(strip((await post('/v1/score', s)).json));
    // A long completion goes first, so the burst behind it queues while it decodes and meets in
    // one batch per kind. On a loaded machine the burst can still trickle in one request at a time,
    // so a burst that merged nothing is tried again: each try still checks what every request returns.
    const blocker = { text: 'w1', min_new_tokens: 256, max_new_tokens: 256, temperature: 1, seed: 1 };
    let merged = 0;
    for (let attempt = 0; attempt < 5 && merged === 0; attempt++) {
      const [batchesBefore, requestsBefore] = await batchCounts();
      const [first, ...together] = await Promise.all([
        post('/v1/complete', blocker),
        ...completions.map((c) => post('/v1/complete', c)),
        ...scores.map((s) => post('/v1/score', s)),
      ]);
      for (const t of [first, ...together]) assert.equal(t.status, 200, t.text);
      assert.deepEqual(
        together.map((t) => strip(t.json)),
        alone,
      );
      const [batches, requests] = await batchCounts();
      assert.equal(requests - requestsBefore, 1 + completions.length + scores.length);
      merged = requests - requestsBefore - (batches - batchesBefore);
    }
    assert.ok(merged > 0, 'five bursts of 15 requests: none merged');
  });
});

describe('decode threads', () => {
  const threaded = (workers: number, batching: Partial<BatchingOptions> = {}) =>
    loadLanguageModels(join(root, 'models'), {
      loader: (dir) => WorkerRuntime.startLm(dir, { workers, intraOpNumThreads: 1 }),
      batching: { concurrency: workers, ...batching },
    });
  const requests = Array.from({ length: 8 }, (_, i) => ({
    text: ['w3 w7', 'w1', 'w5 w2 w9 w4', 'w8 w8'][i % 4],
    maxNewTokens: 4 + ((i * 7) % 13),
    ...(i % 3 === 0 ? {} : { temperature: 0.6 + i / 8, seed: 40 + i, ...(i % 2 ? { topK: 4 } : { topP: 0.8 }) }),
  }));
  const texts = ['w3 w7 w1', 'w2', 'w9 w9 w4 w1 w6 w2'];

  test('completions and scores in two decode threads, batched, equal the in-process ones made alone; tokens stream from the thread', async () => {
    const inProcess = await loadLanguageModels(join(root, 'models'), { intraOpNumThreads: 1 });
    const alone: Completion[] = [];
    for (const r of requests) alone.push(await inProcess.complete('lm-tiny', r));
    const scoredAlone: LmScore[] = [];
    for (const t of texts) scoredAlone.push(await inProcess.score('lm-tiny', t));
    await inProcess.close();

    const watched = alone.reduce((best, c, i) => (c.tokens.length > alone[best].tokens.length ? i : best), 0);
    const models = await threaded(2, { maxWaitMs: 30 });
    try {
      const runtime = models.get('lm-tiny').runtime;
      assert.ok(runtime instanceof WorkerRuntime);
      assert.equal(runtime.threads.length, 2);
      const streamed: string[] = [];
      let inFlightWhileStreaming = 0;
      const [completions, scores] = await Promise.all([
        Promise.all(
          requests.map((r, i) =>
            models.complete(
              'lm-tiny',
              r,
              i === watched
                ? {
                    onPrefix: (_, token) => {
                      streamed.push(token);
                      inFlightWhileStreaming = Math.max(
                        inFlightWhileStreaming,
                        runtime.threads.reduce((n, t) => n + t.inFlight, 0),
                      );
                    },
                  }
                : {},
            ),
          ),
        ),
        Promise.all(texts.map((t) => models.score('lm-tiny', t))),
      ]);
      assert.deepEqual(completions, alone);
      assert.deepEqual(scores, scoredAlone);
      assert.deepEqual(streamed, alone[watched].tokens, 'one event per token, as picked');
      assert.ok(streamed.length > 1);
      assert.ok(inFlightWhileStreaming >= 1, 'the tokens came from a batch held by a decode thread');
    } finally {
      await models.close();
    }
  });

  test('a request aborted mid-batch is dropped in its thread; its batch-mates finish unchanged', async () => {
    let finished = 0;
    const models = await loadLanguageModels(join(root, 'models'), {
      loader: (dir) => WorkerRuntime.startLm(dir, { workers: 1, intraOpNumThreads: 1 }),
      batching: { concurrency: 1, maxWaitMs: 50 },
      observer: () => ({ tokens: () => finished++ }),
    });
    try {
      const request = { text: 'w3 w7', maxNewTokens: 60, temperature: 1, seed: 99 };
      const alone = await models.complete('lm-tiny', request);
      finished = 0;
      const gone = new AbortController();
      const first = models.complete('lm-tiny', { text: 'w1', maxNewTokens: 2 });
      const kept = models.complete('lm-tiny', request);
      // At least 5,000 tokens (no `</s>` before): the row cannot end on its own before its cancellation, sent
      // after its first token, reaches the thread, however long a loaded machine keeps this thread waiting.
      const aborted = models.complete(
        'lm-tiny',
        { ...request, seed: 5, maxNewTokens: 5000, minNewTokens: 5000 },
        { signal: gone.signal, onPrefix: () => gone.abort(new Error('client left')) },
      );
      await assert.rejects(aborted, /client left/);
      assert.deepEqual(await kept, alone);
      await first;
      await models.idle();
      assert.equal(finished, 2, 'the aborted row never finished decoding');
    } finally {
      await models.close();
    }
  });

  test('frost serve runs its language model in --workers threads', async () => {
    const two = await startServer({
      modelsDir: join(root, 'models', 'lm-tiny'),
      port: 0,
      intraOpNumThreads: 1,
      workers: 2,
      log: () => undefined,
    });
    try {
      const metrics = await (await fetch(`${two.url}/metrics`)).text();
      assert.match(metrics, /^frost_decode_threads\{model="lm-tiny"\} 2$/m);
    } finally {
      await two.close();
    }
  });

  test('a crashed thread is replaced; the replacement answers the same', async () => {
    const crashes: string[] = [];
    const models = await loadLanguageModels(join(root, 'models', 'lm-tiny'), {
      loader: (dir) =>
        WorkerRuntime.startLm(dir, { workers: 1, intraOpNumThreads: 1, onCrash: (reason) => crashes.push(reason) }),
    });
    try {
      const before = await models.score('lm-tiny', 'w3 w7 w1');
      const runtime = models.get('lm-tiny').runtime;
      assert.ok(runtime instanceof WorkerRuntime);
      const [thread] = runtime.threads;
      // A message the thread does not understand kills it, as any uncaught error would.
      thread.worker.postMessage({ type: 'no-such-message' });
      while (runtime.threads[0] === thread || runtime.threads.length === 0)
        await new Promise((resolve) => setTimeout(resolve, 10));
      const after = await models.score('lm-tiny', 'w3 w7 w1');
      assert.deepEqual(after, before);
      assert.notEqual(runtime.threads[0], thread, 'replaced');
      assert.match(crashes.join('\n'), /unknown message type 'no-such-message'/);
    } finally {
      await models.close();
    }
  });

  test('a language model is refused by the seq2seq loader and the other way round, by its directory', async () => {
    const lm = join(root, 'models', 'lm-tiny');
    const tiny = join(root, 'models', 'tiny');
    await assert.rejects(WorkerRuntime.start(lm, { workers: 1 }), (err: Error) =>
      err.message.startsWith(`${lm}: a lm model, not a translation or caption model`),
    );
    await assert.rejects(WorkerRuntime.startLm(tiny, { workers: 1 }), (err: Error) =>
      err.message.startsWith(`${tiny}: a translation model, not a language model`),
    );
  });
});

describe('a linked model folder', () => {
  test('--models DIR serves a language model behind a link (DIR/good -> elsewhere), as it does a translation model', async () => {
    const linked = join(root, 'linked');
    await mkdir(linked);
    await symlink(join(root, 'models', 'lm-tiny'), join(linked, 'good'));
    const served = await startServer({
      modelsDir: linked,
      port: 0,
      intraOpNumThreads: 1,
      workers: 1,
      log: () => undefined,
    });
    try {
      const ready = await fetch(`${served.url}/readyz`);
      assert.equal(ready.status, 200, await ready.clone().text());
      assert.deepEqual(await ready.json(), { status: 'ready', models: [], language_models: ['lm-tiny'] });
      const res = await fetch(`${served.url}/v1/score`, {
        method: 'POST',
        body: JSON.stringify({ text: 'w3 w7 w1' }),
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.status, 200);
      assert.deepEqual(((await res.json()) as ScoreResponse).tokens, ['w3', 'w7', 'w1']);
    } finally {
      await served.close();
    }
  });
});

describe('--watch', () => {
  test('a corrupt language model is refused and the old one keeps serving; a good one replaces it', async () => {
    const dir = join(root, 'watched', 'lm-tiny');
    await cp(join(root, 'models', 'lm-tiny'), dir, { recursive: true });
    await writeTinyModelDir(join(root, 'watched', 'tiny'), { name: 'tiny' });
    const reloads: boolean[] = [];
    let notify: (() => void) | undefined;
    const watched = await startServer({
      modelsDir: join(root, 'watched'),
      port: 0,
      intraOpNumThreads: 1,
      workers: 1,
      watch: true,
      log: () => undefined,
      onReload: (name, ok) => {
        if (name !== 'lm-tiny') return;
        reloads.push(ok);
        notify?.();
      },
    });
    const nextReload = () => new Promise<void>((resolve) => (notify = resolve));
    const score = async () => {
      const res = await fetch(`${watched.url}/v1/score`, {
        method: 'POST',
        body: JSON.stringify({ text: 'w3 w7 w1' }),
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(res.status, 200);
      return ((await res.json()) as ScoreResponse).log_prob;
    };
    try {
      const before = await score();
      const card = JSON.parse(await readFile(join(dir, 'model-card.json'), 'utf8')) as {
        graphs: { step: { file: string } };
      };
      const stepFile = join(dir, card.graphs.step.file);
      // Garbage of the recorded size passes the size check and must fail in ONNX Runtime.
      const good = await readFile(stepFile);
      let reloaded = nextReload();
      await writeFile(stepFile, Buffer.alloc(good.length, 7));
      await reloaded;
      assert.deepEqual(reloads, [false]);
      assert.equal(await score(), before);

      reloaded = nextReload();
      const other = join(root, 'other', 'lm-tiny');
      for (const f of await readdir(other)) await copyFile(join(other, f), join(dir, f));
      await reloaded;
      while (!reloads.at(-1)) await nextReload();
      const fresh = await loadLmModelDir(other, { intraOpNumThreads: 1 });
      const expected = (await fresh.score('w3 w7 w1')).logProb;
      await fresh.release();
      const after = await score();
      assert.notEqual(after, before);
      assert.equal(after, expected);
    } finally {
      await watched.close();
    }
  });
});

describe('language models on frost serve', () => {
  test("/v1/score equals the tfjs model's log-probability", async () => {
    const text = 'w3 w7 w1';
    const a = await post('/v1/score', { model: 'lm-tiny', text });
    assert.equal(a.status, 200, a.text);
    const body = a.json as unknown as ScoreResponse;
    const run = await RunFolder.openTask(runDir, 'lm');
    const ckpt = run.findCheckpoint('best');
    const vocab = await run.vocab('tgt');
    const model = run.rebuildLanguageModel(vocab.size, await run.loadCheckpoint(ckpt), ckpt);
    const ids = [SPECIALS.eos.id, ...vocab.encode(text.split(' ')), SPECIALS.eos.id];
    const { logProbs, state } = model.targetLogProbs(
      { B: 1, T: ids.length - 1, inputs: Int32Array.from(ids.slice(0, -1)), targets: Int32Array.from(ids.slice(1)) },
      model.initialState(1),
    );
    tf.dispose(Object.values(state));
    model.params.dispose();
    const expected = logProbs.reduce((s, v) => s + v, 0);
    assert.deepEqual(body.tokens, ['w3', 'w7', 'w1']);
    assert.equal(body.token_log_probs.length, 4);
    assert.ok(
      Math.abs(body.log_prob - expected) <= 1e-4 * Math.max(1, Math.abs(expected)),
      `${body.log_prob} vs ${expected}`,
    );
    assert.ok(Math.abs(body.perplexity - Math.exp(-expected / 4)) < 1e-3);
  });

  test('/v1/complete with a seed is deterministic; without one it returns the seed it used', async () => {
    const req = { text: 'w3 w7', max_new_tokens: 12, temperature: 0.8, seed: 1234 };
    const a = (await post('/v1/complete', req)).json as unknown as CompleteResponse;
    const b = (await post('/v1/complete', req)).json as unknown as CompleteResponse;
    assert.equal(a.completion, b.completion);
    assert.deepEqual(a.tokens, b.tokens);
    assert.equal(a.seed, 1234);
    assert.ok(a.tokens.length <= 12 && a.tokens.length > 0);
    const unseeded = (await post('/v1/complete', { text: 'w3 w7', max_new_tokens: 12, temperature: 0.8 }))
      .json as unknown as CompleteResponse;
    assert.equal(typeof unseeded.seed, 'number');
    const replay = (
      await post('/v1/complete', { text: 'w3 w7', max_new_tokens: 12, temperature: 0.8, seed: unseeded.seed })
    ).json as unknown as CompleteResponse;
    assert.deepEqual(replay.tokens, unseeded.tokens);
    const greedy = (await post('/v1/complete', { text: 'w3 w7', max_new_tokens: 5 }))
      .json as unknown as CompleteResponse;
    assert.equal(greedy.seed, undefined);
    assert.ok(['eos', 'length'].includes(greedy.finish_reason));
  });

  test('min_new_tokens holds </s> back until that many tokens; stop tokens still end the completion', async () => {
    const complete = async (body: object) =>
      (await post('/v1/complete', { text: 'w3 w7', ...body })).json as unknown as CompleteResponse;
    const greedy = await complete({ max_new_tokens: 30 });
    assert.equal(greedy.finish_reason, 'eos', 'the tiny model ends this prompt early on its own');
    assert.ok(greedy.tokens.length < 30);
    const held = await complete({ max_new_tokens: 30, min_new_tokens: 30 });
    assert.equal(held.finish_reason, 'length');
    assert.equal(held.tokens.length, 30);
    const sampled = await complete({ max_new_tokens: 40, min_new_tokens: 25, temperature: 1, seed: 3 });
    assert.ok(sampled.tokens.length >= 25, `${sampled.tokens.length} tokens`);
    const stop = held.tokens[4];
    const stopped = await complete({ max_new_tokens: 30, min_new_tokens: 30, stop: [stop] });
    assert.equal(stopped.finish_reason, 'stop');
    assert.equal(stopped.tokens.at(-1), stop);
    assert.ok(stopped.tokens.length <= 5);
  });

  test('?stream=1 sends each token as an event, then the result', async () => {
    const res = await post('/v1/complete?stream=1', { text: 'w3', max_new_tokens: 10, temperature: 1, seed: 7 });
    assert.equal(res.status, 200);
    const events = res.text
      .trim()
      .split('\n\n')
      .map((block) => {
        const [event, data] = block.split('\n');
        return { event: event.slice('event: '.length), data: JSON.parse(data.slice('data: '.length)) as unknown };
      });
    const result = events.at(-1)!;
    assert.equal(result.event, 'result');
    const tokens = events.filter((e) => e.event === 'token').map((e) => (e.data as { token: string }).token);
    assert.deepEqual(tokens, (result.data as CompleteResponse).tokens);
    const plain = (await post('/v1/complete', { text: 'w3', max_new_tokens: 10, temperature: 1, seed: 7 }))
      .json as unknown as CompleteResponse;
    assert.deepEqual(plain.tokens, tokens);
  });

  const bad: Array<[string, string, unknown, RegExp]> = [
    ['empty text', '/v1/complete', { text: '' }, /text: must be a non-empty string/],
    ['whitespace-only text', '/v1/score', { text: ' \u200b\t ' }, /text: must be a non-empty string/],
    ['text over the limit', '/v1/complete', { text: 'w1 '.repeat(20) }, /text: must be at most 40 characters/],
    ['max_new_tokens 0', '/v1/complete', { text: 'w1', max_new_tokens: 0 }, /max_new_tokens/],
    ['max_new_tokens 10000', '/v1/complete', { text: 'w1', max_new_tokens: 10_000 }, /max_new_tokens/],
    [
      'min_new_tokens above max_new_tokens',
      '/v1/complete',
      { text: 'w1', max_new_tokens: 10, min_new_tokens: 11 },
      /min_new_tokens: must not exceed max_new_tokens/,
    ],
    ['min_new_tokens above the default 32', '/v1/complete', { text: 'w1', min_new_tokens: 33 }, /min_new_tokens/],
    // One message for the one field (issue #51, 8: there were two).
    [
      'temperature 0',
      '/v1/complete',
      { text: 'w1', temperature: 0 },
      /^Invalid request: temperature: must be at least 0\.001 \(leave temperature out for greedy decoding\)$/,
    ],
    [
      'temperature < 0',
      '/v1/complete',
      { text: 'w1', temperature: -0.5 },
      /^Invalid request: temperature: must be at least 0\.001 \(leave temperature out for greedy decoding\)$/,
    ],
    ['top_p 0', '/v1/complete', { text: 'w1', top_p: 0 }, /top_p: must be in \(0, 1\]/],
    ['top_p > 1', '/v1/complete', { text: 'w1', top_p: 1.2 }, /top_p: must be in \(0, 1\]/],
    ['a seed out of range', '/v1/complete', { text: 'w1', temperature: 1, seed: -3 }, /seed/],
    ['an unknown field', '/v1/complete', { text: 'w1', temprature: 1 }, /temprature/],
  ];
  for (const [what, path, body, message] of bad) {
    test(`${what} is a 400 naming its field`, async () => {
      const a = await post(path, body);
      assert.equal(a.status, 400, a.text);
      assert.equal(a.json.code, 'FROST_ERR_INVALID_REQUEST');
      assert.match(String(a.json.message), message);
    });
  }

  test('GET /v1/models lists the language model without its vocabulary', async () => {
    const res = await fetch(`${server.url}/v1/models`);
    const body = (await res.json()) as ModelsResponse;
    assert.deepEqual(
      body.models.map((m) => m.name),
      ['tiny'],
    );
    assert.equal(body.default_language_model, 'lm-tiny');
    const lm = body.language_models![0];
    assert.equal(lm.name, 'lm-tiny');
    assert.equal(lm.task, 'lm');
    assert.deepEqual(lm.target, { lang: 'en', size: 28 });
    assert.deepEqual(lm.graphs.step.state, ['h0', 'c0']);
    assert.ok(!JSON.stringify(body).includes('"tokens"'), 'no token lists');
    const ready = (await (await fetch(`${server.url}/readyz`)).json()) as Record<string, unknown>;
    assert.deepEqual(ready, { status: 'ready', models: ['tiny'], language_models: ['lm-tiny'] });
  });

  test('/openapi.json documents /v1/complete and /v1/score with their limits', async () => {
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
      paths: Record<string, unknown>;
      components: { schemas: Record<string, { properties: Record<string, Record<string, unknown>> }> };
    };
    assert.ok(doc.paths['/v1/complete'] && doc.paths['/v1/score']);
    const req = doc.components.schemas.CompleteRequest.properties;
    assert.equal(req.text.maxLength, 40);
    assert.equal(req.max_new_tokens.maximum, 256);
    assert.equal(req.top_p.maximum, 1);
    assert.equal(doc.components.schemas.ScoreRequest.properties.text.maxLength, 40);
  });

  test('a translation model is not a language model; translation still works beside one', async () => {
    const a = await post('/v1/complete', { model: 'tiny', text: 'w1' });
    assert.equal(a.status, 404);
    assert.match(String(a.json.message), /Unknown model 'tiny'; available: lm-tiny/);
    const t = await post('/v1/translate', { model: 'tiny', text: 'ein hund' });
    assert.equal(t.status, 200, t.text);
  });
});
