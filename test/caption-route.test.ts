/**
 * `POST /v1/caption` in an app mounted on in-process runtimes (serve/app.ts with
 * serve/in-process-runtime.ts): the round trip, how concurrent requests are batched, the request
 * errors around an upload, the request timeout, and a runtime that cannot caption. The real
 * `frost serve`, its decode threads and the bad image files the issue names are in
 * serve-caption.test.ts.
 *
 * The caption model is the shared toy model, wrapped so the test can hold its batches at a gate and
 * see which batches reached it: a bad request must never reach the model.
 */
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import type { SearchOptions } from '../core/decode/types.ts';
import { decodeImage } from '../core/image/decode-node.ts';
import { preprocessRgba } from '../core/image/preprocess.ts';
import type { Caption, CaptionHooks, CaptionOptions } from '../core/runtime/caption.ts';
import { loadModelDir } from '../core/runtime/load-node.ts';
import type { ModelCard } from '../core/runtime/model-card.ts';
import type { Seq2SeqRuntime, TranslateHooks, Translation } from '../core/runtime/seq2seq.ts';
import { createApp } from '../serve/app.ts';
import { CAPTION } from '../serve/batch-kinds.ts';
import { BatcherPool } from '../serve/batcher-pool.ts';
import { InProcessRuntime } from '../serve/in-process-runtime.ts';
import { ModelRegistry } from '../serve/model-registry.ts';
import type { ModelRuntime } from '../serve/model-runtime.ts';
import type { RequestLimits } from '../serve/schemas.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';
import { TOY_CAPTION_MODEL_NAME, toyCaptionModel, type ToyCaptionModel } from './helpers/toy-caption-model.ts';

/** The in-process runtime of a caption model, whose caption batches wait at a gate while it is closed. */
class GatedRuntime implements ModelRuntime {
  readonly card: ModelCard;
  /** Every caption batch that passed the gate: its size and beam. */
  readonly batches: Array<{ size: number; beam: number | undefined }> = [];
  /** Caption batches that reached the gate (passed or waiting). */
  entered = 0;
  private gate: Promise<void> = Promise.resolve();
  private openGate: () => void = () => {};

  constructor(private readonly inner: InProcessRuntime) {
    this.card = inner.card;
  }

  close(): void {
    this.gate = new Promise((resolve) => (this.openGate = resolve));
  }

  open(): void {
    this.openGate();
  }

  async captionEach(
    images: readonly Float32Array[],
    options?: CaptionOptions,
    hooks?: CaptionHooks,
  ): Promise<Caption[]> {
    this.entered++;
    await this.gate;
    this.batches.push({ size: images.length, beam: options?.beam });
    return this.inner.captionEach(images, options, hooks);
  }

  translateEach(texts: readonly string[], options?: SearchOptions, hooks?: TranslateHooks): Promise<Translation[]> {
    return this.inner.translateEach(texts, options, hooks);
  }

  release(): Promise<void> {
    return this.inner.release();
  }
}

let root: string;
let toy: ToyCaptionModel;
let captioner: InProcessRuntime;
let translator: InProcessRuntime;
let bare: Seq2SeqRuntime;
/** The toy model's test images, as files. */
let files: Buffer[];
const servers: Server[] = [];

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-caption-route-'));
  toy = await toyCaptionModel();
  captioner = await InProcessRuntime.load(toy.modelDir, { intraOpNumThreads: 1 });
  translator = await InProcessRuntime.load(await writeTinyModelDir(join(root, 'tiny')), { intraOpNumThreads: 1 });
  bare = await loadModelDir(toy.modelDir, { intraOpNumThreads: 1 });
  files = await Promise.all(toy.testImages.slice(0, 8).map((im) => readFile(im.path)));
});

after(async () => {
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  await Promise.all([captioner, translator, bare].map((rt) => rt?.release()));
  if (root) await rm(root, { recursive: true, force: true });
});

/** An app over the gated caption model (the default), the translation model and a bare Seq2SeqRuntime. */
async function app(limits: Partial<RequestLimits> = {}, concurrency = 2) {
  const gated = new GatedRuntime(captioner);
  const registry = new ModelRegistry(
    [
      { name: TOY_CAPTION_MODEL_NAME, runtime: gated },
      { name: 'tiny-en-de', runtime: translator },
      { name: 'bare-caption', runtime: bare },
    ],
    TOY_CAPTION_MODEL_NAME,
  );
  const pool = new BatcherPool(registry, { concurrency });
  const internal: unknown[] = [];
  const server = createApp({ registry, pool, limits, onInternalError: (err) => internal.push(err) }).listen(
    0,
    '127.0.0.1',
  );
  servers.push(server);
  await new Promise((resolve) => server.once('listening', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/caption`;
  const post = async (body: FormData | string, contentType?: string) => {
    const res = await fetch(url, { method: 'POST', body, headers: contentType ? { 'content-type': contentType } : {} });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- JSON under test
    return { status: res.status, body: (await res.json()) as Record<string, any> };
  };
  return { gated, pool, post, internal };
}

const form = (bytes: Uint8Array, name = 'photo.png', fields: Record<string, string> = {}) => {
  const body = new FormData();
  body.append('image', new Blob([new Uint8Array(bytes)]), name);
  for (const [k, v] of Object.entries(fields)) body.append(k, v);
  return body;
};

/** The caption of one image alone, in-process, from the file as the server must preprocess it. */
async function expected(bytes: Uint8Array, beam = 10): Promise<Caption> {
  const { rgba, width, height } = await decodeImage(bytes);
  const [caption] = await captioner.captionEach([preprocessRgba(rgba, width, height, captioner.card.image!)], { beam });
  return caption!;
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('POST /v1/caption, in-process', () => {
  test('multipart and JSON give the caption of the preprocessed file', async () => {
    const { post, gated, internal } = await app();
    const want = await expected(files[0]!);
    const viaForm = await post(form(files[0]!));
    assert.equal(viaForm.status, 200, JSON.stringify(viaForm.body));
    assert.deepEqual(
      [viaForm.body.caption, viaForm.body.tokens, viaForm.body.score],
      [want.text, want.tokens, want.score],
    );
    const viaJson = await post(JSON.stringify({ image: files[0]!.toString('base64') }), 'application/json');
    assert.deepEqual({ ...viaJson.body, timing: 0 }, { ...viaForm.body, timing: 0 });
    assert.deepEqual(
      gated.batches,
      [
        { size: 1, beam: 10 },
        { size: 1, beam: 10 },
      ],
      "the paper's beam of 10 by default",
    );
    assert.deepEqual(internal, []);
  });

  test('requests waiting for the model are decoded as one batch per beam width, each getting its own caption', async () => {
    const { post, gated, pool } = await app({}, 1);
    gated.close();
    const first = post(form(files[0]!));
    await until(() => gated.entered === 1);
    // While the first batch holds the model: five beam-10 requests and one beam-3 request queue up.
    const beams = [10, 10, 3, 10, 10, 10];
    const queued = beams.map((beam, i) => post(form(files[i + 1]!, `${i}.png`, { beam: String(beam) })));
    await until(() => pool.for(TOY_CAPTION_MODEL_NAME, CAPTION).depth === beams.length);
    gated.open();
    const answers = await Promise.all([first, ...queued]);
    assert.deepEqual(gated.batches, [
      { size: 1, beam: 10 },
      { size: 5, beam: 10 },
      { size: 1, beam: 3 },
    ]);
    for (const [i, a] of answers.entries()) {
      assert.equal(a.status, 200, JSON.stringify(a.body));
      const want = await expected(files[i]!, i === 0 ? 10 : beams[i - 1]);
      // Decoded with others, rows go through other matrix shapes: same words, scores equal up to rounding.
      assert.deepEqual(a.body.tokens, want.tokens, `request ${i}`);
      assert.ok(
        Math.abs(a.body.score - want.score) <= 1e-5 * Math.abs(want.score),
        `request ${i}: ${a.body.score} vs ${want.score}`,
      );
    }
  });

  test('request errors get a 4xx with a stable code and never reach the model', async () => {
    const maxImageBytes = 64 * 1024;
    const { post, gated } = await app({ maxImageBytes });
    const gif = await sharp(files[0]!).gif().toBuffer();
    const big = Buffer.concat([files[0]!, Buffer.alloc(maxImageBytes)]);
    const noImage = new FormData();
    noImage.append('model', TOY_CAPTION_MODEL_NAME);
    const cases: Array<[string, FormData | string, string | undefined, number, string, RegExp?]> = [
      [
        'GIF',
        form(gif, 'a.gif'),
        undefined,
        415,
        'FROST_ERR_UNSUPPORTED_IMAGE',
        /^a\.gif: GIF images are not supported/,
      ],
      ['no image field', noImage, undefined, 400, 'FROST_ERR_NO_IMAGE', /no file field 'image'/],
      [
        'JSON without image',
        JSON.stringify({ model: TOY_CAPTION_MODEL_NAME }),
        'application/json',
        400,
        'FROST_ERR_NO_IMAGE',
      ],
      [
        'JSON, not base64',
        JSON.stringify({ image: 'not base64!' }),
        'application/json',
        400,
        'FROST_ERR_INVALID_REQUEST',
        /image: not valid base64/,
      ],
      ['malformed JSON', '{"image": ', 'application/json', 400, 'FROST_ERR_BAD_JSON'],
      [
        'beam too large',
        form(files[0]!, 'photo.png', { beam: '99' }),
        undefined,
        400,
        'FROST_ERR_INVALID_REQUEST',
        /beam: must be an integer from 1 to 16/,
      ],
      [
        'JSON beam not an integer',
        JSON.stringify({ image: files[0]!.toString('base64'), beam: 2.5 }),
        'application/json',
        400,
        'FROST_ERR_INVALID_REQUEST',
        /beam/,
      ],
      ['plain text body', 'hello', 'text/plain', 415, 'FROST_ERR_CAPTION_CONTENT_TYPE', /got text\/plain/],
      [
        'an unknown model',
        form(files[0]!, 'photo.png', { model: 'nope' }),
        undefined,
        404,
        'FROST_ERR_UNKNOWN_MODEL',
        /available: bare-caption, tiny-en-de, toy-caption/,
      ],
      [
        'a translation model',
        form(files[0]!, 'photo.png', { model: 'tiny-en-de' }),
        undefined,
        400,
        'FROST_ERR_NOT_A_CAPTION_MODEL',
        /'tiny-en-de' is a translation model/,
      ],
      [
        'a file over maxImageBytes',
        form(big, 'big.png'),
        undefined,
        413,
        'FROST_ERR_IMAGE_TOO_LARGE',
        /^big\.png: larger than the limit of 65536 bytes/,
      ],
      [
        'a JSON body over its limit',
        JSON.stringify({ image: big.toString('base64') + 'A'.repeat(64 * 1024) }),
        'application/json',
        413,
        'FROST_ERR_BODY_TOO_LARGE',
      ],
      [
        'a runtime that cannot caption',
        form(files[0]!, 'photo.png', { model: 'bare-caption' }),
        undefined,
        501,
        'FROST_ERR_CAPTION_UNAVAILABLE',
        /'bare-caption'/,
      ],
    ];
    for (const [what, body, type, status, code, message] of cases) {
      const res = await post(body, type);
      assert.equal(res.status, status, `${what}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.code, code, what);
      assert.equal(res.body.statusCode, status, what);
      if (message) assert.match(String(res.body.message), message, what);
    }
    assert.equal(gated.entered, 0, 'no bad request reached the model');
    // The same app still captions a good upload.
    assert.equal((await post(form(files[0]!))).status, 200);
  });

  test('a request past its timeout gets 504, and one that timed out while queued is never decoded', async () => {
    const { post, gated } = await app({ timeoutMs: 300 }, 1);
    gated.close();
    const decoding = post(form(files[0]!));
    await until(() => gated.entered === 1);
    const queued = await post(form(files[1]!));
    assert.equal(queued.status, 504, JSON.stringify(queued.body));
    assert.equal(queued.body.code, 'FROST_ERR_TIMEOUT');
    assert.equal((await decoding).status, 504);
    gated.open();
    await until(() => gated.batches.length === 1);
    assert.deepEqual(gated.batches, [{ size: 1, beam: 10 }], 'only the batch already decoding ran');
    assert.equal(gated.entered, 1);
  });
});
