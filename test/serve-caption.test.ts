/**
 * `POST /v1/caption` through the real `frost serve` (bin/frost.js in a child process, decoding in
 * its worker thread) with a caption model and a translation model loaded at once. Answers must
 * equal what the library gives in-process for the same file: `CaptionRuntime.caption` on
 * `preprocessRgba(decodeImage(file))` with the card's image spec. Every bad upload the issue names
 * gets its own 4xx and code, and the server keeps serving. The route's own cases (request errors,
 * batching order, embedded runtimes) are in caption-route.test.ts.
 */
import assert from 'node:assert/strict';
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { crc32, deflateSync } from 'node:zlib';
import sharp from 'sharp';
import { decodeImage } from '../core/image/decode-node.ts';
import { preprocessRgba } from '../core/image/preprocess.ts';
import type { Caption, CaptionRuntime } from '../core/runtime/caption.ts';
import { loadCaptionModelDir } from '../core/runtime/load-node.ts';
import { type FrostServeProcess, startFrostServe } from './helpers/frost-serve.ts';
import { writeTinyModelDir } from './helpers/tiny-model.ts';
import { TOY_CAPTION_MODEL_NAME, toyCaptionModel, type ToyCaptionModel } from './helpers/toy-caption-model.ts';

const TRANSLATION_MODEL = 'tiny-en-de';

let root: string;
let toy: ToyCaptionModel;
let direct: CaptionRuntime;
let child: FrostServeProcess['child'];
let url: string;
let serverLog: string[] = [];

/** The toy model's first test image (a PNG) and a JPEG of another one with another caption. */
let png: { name: string; bytes: Buffer };
let jpeg: { name: string; bytes: Buffer };

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'frost-serve-caption-'));
  toy = await toyCaptionModel();
  // `--models` takes a folder of model folders: the shared toy model is copied in (it is read-only).
  const captionDir = join(root, 'models', TOY_CAPTION_MODEL_NAME);
  await mkdir(captionDir, { recursive: true });
  for (const file of ['model-card.json', 'encoder.onnx', 'decoder.onnx'])
    await copyFile(join(toy.modelDir, file), join(captionDir, file));
  await writeTinyModelDir(join(root, 'models', 'tiny'));

  direct = await loadCaptionModelDir(toy.modelDir, { intraOpNumThreads: 1 });
  const [first, ...rest] = toy.testImages;
  const other = rest.find((im) => im.captions[0] !== first!.captions[0])!;
  png = { name: 'first.png', bytes: await readFile(first!.path) };
  jpeg = { name: 'other.jpg', bytes: await sharp(other.path).jpeg({ quality: 95 }).toBuffer() };

  // One ORT thread on both sides, so the comparison with the in-process runtime is exact.
  ({
    child,
    url,
    log: serverLog,
  } = await startFrostServe([
    '--models',
    join(root, 'models'),
    '--default-model',
    TOY_CAPTION_MODEL_NAME,
    '--port',
    '0',
    '--threads',
    '1',
    '--workers',
    '1',
  ]));
});

after(async () => {
  if (child && child.exitCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  await direct?.release();
  if (root) await rm(root, { recursive: true, force: true });
});

/** What the library says about `bytes`, decoded and preprocessed as the server must. */
async function expectedCaption(bytes: Uint8Array, beam = 10): Promise<Caption> {
  const { rgba, width, height } = await decodeImage(bytes);
  const [caption] = await direct.caption([preprocessRgba(rgba, width, height, direct.imageSpec)], { beam });
  return caption!;
}

interface Answer {
  status: number;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON under test
}

async function post(path: string, body: FormData | string, contentType?: string): Promise<Answer> {
  const res = await fetch(`${url}${path}`, {
    method: 'POST',
    body,
    headers: contentType ? { 'content-type': contentType } : {},
  });
  assert.match(res.headers.get('content-type') ?? '', /application\/json/, `POST ${path} answers JSON`);
  return { status: res.status, body: await res.json() };
}

const form = (bytes: Uint8Array, name: string, fields: Record<string, string> = {}): FormData => {
  const body = new FormData();
  body.append('image', new Blob([new Uint8Array(bytes)]), name);
  for (const [k, v] of Object.entries(fields)) body.append(k, v);
  return body;
};
const caption = (body: FormData | string, contentType?: string) => post('/v1/caption', body, contentType);

function assertError(a: Answer, status: number, code: string, what: string): string {
  assert.equal(a.status, status, `${what}: ${JSON.stringify(a.body)}`);
  assert.equal(a.body.code, code, what);
  assert.equal(a.body.statusCode, status, what);
  return String(a.body.message);
}

/**
 * A valid 40-megapixel PNG (8000×5000, 1-bit greyscale) in a few kilobytes, written out by hand:
 * encoding 40 megapixels of RGB would cost seconds on this machine, and the server must refuse it
 * from its header anyway.
 */
function fortyMegapixelPng(width = 8000, height = 5000): Buffer {
  const chunk = (type: string, data: Buffer): Buffer => {
    const typed = Buffer.concat([Buffer.from(type, 'latin1'), data]);
    const out = Buffer.alloc(4 + typed.length + 4);
    out.writeUInt32BE(data.length, 0);
    typed.copy(out, 4);
    out.writeUInt32BE(crc32(typed), 4 + typed.length);
    return out;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 1; // bit depth; colour type (9), compression, filter and interlace (10-12) stay 0
  // Each row: filter type 0, then width/8 bytes of black.
  const rows = Buffer.alloc(height * (1 + Math.ceil(width / 8)));
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([
    signature,
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(rows)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

describe('POST /v1/caption on frost serve', () => {
  test('multipart round trip equals CaptionRuntime.caption on the preprocessed file', async () => {
    for (const file of [png, jpeg]) {
      const a = await caption(form(file.bytes, file.name));
      assert.equal(a.status, 200, JSON.stringify(a.body));
      const expected = await expectedCaption(file.bytes);
      assert.deepEqual(
        { caption: a.body.caption, tokens: a.body.tokens, score: a.body.score },
        { caption: expected.text, tokens: expected.tokens, score: expected.score },
      );
      assert.equal(a.body.model, TOY_CAPTION_MODEL_NAME);
      const { width, height } = await sharp(file.bytes).metadata();
      assert.deepEqual(a.body.image, { width, height, format: file === png ? 'png' : 'jpeg' });
      assert.equal(typeof a.body.timing.total_ms, 'number');
    }
    // A model that ignored its pixels would give both files one caption.
    assert.notEqual((await expectedCaption(png.bytes)).text, (await expectedCaption(jpeg.bytes)).text);
  });

  test('multipart fields: model and beam', async () => {
    const a = await caption(form(jpeg.bytes, jpeg.name, { model: TOY_CAPTION_MODEL_NAME, beam: '2' }));
    assert.equal(a.status, 200, JSON.stringify(a.body));
    const expected = await expectedCaption(jpeg.bytes, 2);
    assert.deepEqual([a.body.caption, a.body.score], [expected.text, expected.score]);
  });

  test('JSON base64 round trip gives the same caption as multipart', async () => {
    const viaForm = await caption(form(png.bytes, png.name));
    for (const image of [png.bytes.toString('base64'), `data:image/png;base64,${png.bytes.toString('base64')}`]) {
      const a = await caption(JSON.stringify({ image, model: TOY_CAPTION_MODEL_NAME }), 'application/json');
      assert.equal(a.status, 200, JSON.stringify(a.body));
      assert.deepEqual({ ...a.body, timing: undefined }, { ...viaForm.body, timing: undefined });
    }
    const expected = await expectedCaption(png.bytes, 3);
    const beam3 = await caption(JSON.stringify({ image: png.bytes.toString('base64'), beam: 3 }), 'application/json');
    assert.deepEqual([beam3.body.caption, beam3.body.score], [expected.text, expected.score]);
  });

  test('concurrent requests each get the caption of their own image', async () => {
    const files = await Promise.all(toy.testImages.slice(0, 12).map((im) => readFile(im.path)));
    const before = await batchSizeSum();
    const answers = await Promise.all(files.map((bytes, i) => caption(form(bytes, `${i}.png`))));
    for (const [i, a] of answers.entries()) {
      assert.equal(a.status, 200, JSON.stringify(a.body));
      const expected = await expectedCaption(files[i]!);
      // Batched with others, the rows run through other matrix shapes: the words are the same, the
      // score equal up to float rounding.
      assert.deepEqual(a.body.tokens, expected.tokens, `image ${i}`);
      assert.ok(
        Math.abs(a.body.score - expected.score) <= 1e-5 * Math.abs(expected.score),
        `image ${i}: ${a.body.score} vs ${expected.score}`,
      );
    }
    assert.ok(new Set(answers.map((a) => a.body.caption)).size > 1, 'the images do not all get one caption');
    assert.equal((await batchSizeSum()) - before, files.length, 'each image was decoded exactly once');
  });

  test('bad uploads get a 4xx with their code, and the server stays healthy', async () => {
    const pdf = Buffer.from(
      '%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n',
    );
    const huge = fortyMegapixelPng();
    const meta = await sharp(huge).metadata();
    assert.deepEqual(
      [meta.format, meta.width, meta.height],
      ['png', 8000, 5000],
      'the 40-megapixel PNG is a well-formed PNG',
    );
    const jpegBytes = jpeg.bytes;
    const cases: Array<[string, () => Promise<Answer>, number, string, RegExp?]> = [
      ['empty file', () => caption(form(new Uint8Array(0), 'empty.jpg')), 400, 'FROST_ERR_IMAGE_EMPTY'],
      [
        'truncated JPEG',
        () => caption(form(jpegBytes.subarray(0, jpegBytes.length >> 1), 'cut.jpg')),
        400,
        'FROST_ERR_IMAGE_TRUNCATED',
        /^cut\.jpg: the JPEG is truncated/,
      ],
      [
        'PDF renamed .jpg',
        () => caption(form(pdf, 'scan.jpg')),
        415,
        'FROST_ERR_NOT_AN_IMAGE',
        /^scan\.jpg: not an image: the bytes are a PDF/,
      ],
      [
        '40-megapixel PNG',
        () => caption(form(huge, 'huge.png')),
        413,
        'FROST_ERR_IMAGE_TOO_LARGE',
        /^huge\.png: the image is 8000×5000 \(40\.0 megapixels\)/,
      ],
      [
        'an 11 MiB multipart upload',
        () => caption(form(Buffer.concat([jpegBytes, Buffer.alloc(11 * 1024 * 1024)]), 'big.jpg')),
        413,
        'FROST_ERR_IMAGE_TOO_LARGE',
        /^big\.jpg: larger than the limit of 10485760 bytes/,
      ],
      [
        'a 15 MB JSON body',
        () => caption(JSON.stringify({ image: Buffer.alloc(11 * 1024 * 1024).toString('base64') }), 'application/json'),
        413,
        'FROST_ERR_BODY_TOO_LARGE',
      ],
      [
        'a translation model',
        () => caption(form(jpegBytes, jpeg.name, { model: TRANSLATION_MODEL })),
        400,
        'FROST_ERR_NOT_A_CAPTION_MODEL',
        /'tiny-en-de' is a translation model/,
      ],
      [
        'translating with the caption model',
        () =>
          post(
            '/v1/translate',
            JSON.stringify({ model: TOY_CAPTION_MODEL_NAME, text: 'a red square' }),
            'application/json',
          ),
        400,
        'FROST_ERR_NOT_A_TRANSLATION_MODEL',
        /'toy-caption' is a caption model/,
      ],
    ];
    for (const [what, send, status, code, message] of cases) {
      const message_ = assertError(await send(), status, code, what);
      if (message) assert.match(message_, message, what);
      const health = await fetch(`${url}/healthz`);
      assert.equal(health.status, 200, `healthy after: ${what}`);
      await health.arrayBuffer();
    }

    assert.equal((await fetch(`${url}/readyz`)).status, 200);
    // Both models still answer, the caption one as before.
    const good = await caption(form(png.bytes, png.name));
    assert.equal(good.body.caption, (await expectedCaption(png.bytes)).text);
    const translated = await post(
      '/v1/translate',
      JSON.stringify({ model: TRANSLATION_MODEL, text: 'a dog runs' }),
      'application/json',
    );
    assert.equal(translated.status, 200, JSON.stringify(translated.body));
    assert.equal(child.exitCode, null, 'the server is still running');
    assert.ok(
      !serverLog.some((l) => /"level":50/.test(l)),
      `no error was logged: ${serverLog.filter((l) => /"level":50/.test(l)).join('\n')}`,
    );

    const metrics = await (await fetch(`${url}/metrics`)).text();
    for (const [status, code] of [
      ['415', 'FROST_ERR_NOT_AN_IMAGE'],
      ['413', 'FROST_ERR_IMAGE_TOO_LARGE'],
      ['400', 'FROST_ERR_IMAGE_TRUNCATED'],
    ]) {
      assert.match(
        metrics,
        new RegExp(
          `^frost_request_duration_seconds_count\\{method="POST",route="/v1/caption",status="${status}"\\} [1-9]`,
          'm',
        ),
      );
      assert.match(metrics, new RegExp(`^frost_errors_total\\{code="${code}"\\} [1-9]`, 'm'));
    }
    assert.match(
      metrics,
      /^frost_request_duration_seconds_count\{method="POST",route="\/v1\/caption",status="200"\} [1-9]/m,
    );
  });

  test('/openapi.json documents /v1/caption: multipart and JSON bodies, the answer and the errors', async () => {
    const doc = (await (await fetch(`${url}/openapi.json`)).json()) as any; // eslint-disable-line @typescript-eslint/no-explicit-any -- JSON under test
    const op = doc.paths['/v1/caption']?.post;
    assert.ok(op, 'POST /v1/caption is documented');
    assert.deepEqual(op.requestBody.content['multipart/form-data'].schema.required, ['image']);
    assert.equal(op.requestBody.content['application/json'].schema.$ref, '#/components/schemas/CaptionRequest');
    assert.deepEqual(doc.components.schemas.CaptionRequest.required, ['image']);
    assert.deepEqual(Object.keys(doc.components.schemas.CaptionRequest.properties).sort(), ['beam', 'image', 'model']);
    assert.deepEqual(doc.components.schemas.CaptionResponse.required, [
      'model',
      'caption',
      'tokens',
      'score',
      'image',
      'timing',
    ]);
    for (const status of ['200', '400', '404', '413', '415', '503', '504'])
      assert.ok(op.responses[status], `answer ${status} is documented`);
    for (const code of [
      'FROST_ERR_NOT_AN_IMAGE',
      'FROST_ERR_IMAGE_TRUNCATED',
      'FROST_ERR_IMAGE_TOO_LARGE',
      'FROST_ERR_IMAGE_EMPTY',
      'FROST_ERR_NOT_A_CAPTION_MODEL',
    ]) {
      assert.match(JSON.stringify(op.responses), new RegExp(code), `${code} is documented`);
    }
  });
});

/** `frost_batch_size_sum` of the caption model: images decoded so far. */
async function batchSizeSum(): Promise<number> {
  const metrics = await (await fetch(`${url}/metrics`)).text();
  return Number(
    metrics.match(new RegExp(`^frost_batch_size_sum\\{model="${TOY_CAPTION_MODEL_NAME}"\\} (\\d+)`, 'm'))?.[1] ?? 0,
  );
}
