/**
 * `POST /v1/caption`: an image in, a sentence out.
 *
 * The upload (serve/caption-upload.ts: multipart or JSON base64) is checked by content (JPEG or
 * PNG), decoded with sharp and preprocessed with the model card's image spec by
 * core/image/preprocess.ts, as the CLI and the browser do. That happens here, before the upload
 * takes a place in the model's queue, so that a bad one is refused with its own 4xx and code:
 * sharp decodes in libuv's pool and the preprocessing runs in its own thread
 * (serve/image-preprocess-thread.ts), so neither holds the event loop. The pixels then go through the model's caption
 * batcher (serve/batch-kinds.ts), so
 * concurrent requests share one encoder run and one beam search in the model's decode thread.
 */
import { Router, type Request, type Response } from 'express';
import { type DecodedImage, decodeImage, ImageDecodeError, type ImageDecodeReason } from '../core/image/decode-node.ts';
import { DEFAULT_CAPTION_BEAM } from '../core/runtime/caption.ts';
import type { CaptionResponse } from '../core/wire.ts';
import { assertCaptions, CAPTION } from './batch-kinds.ts';
import type { BatcherPool } from './batcher-pool.ts';
import { kindFamily } from './batcher.ts';
import { imagePreprocessThread } from './image-preprocess-thread.ts';
import { type ErrorCode, HttpError } from './errors.ts';
import { MODEL_VERSION_HEADER, modelVersion } from './model-version.ts';
import { sendJson } from './json-response.ts';
import type { ModelRegistry } from './model-registry.ts';
import { requestDeadline } from './request-deadline.ts';
import { type CaptionUpload, uploadReader } from './caption-upload.ts';
import type { RequestLimits } from './schemas.ts';
import { UploadBudget } from './upload-budget.ts';

/** Options of {@link captionRouter}. */
export interface CaptionRouterOptions {
  registry: ModelRegistry;
  pool: BatcherPool;
  /** `timeoutMs`, `maxImageBytes`, `maxImagePixels` and `maxImageSide` apply here. */
  limits: RequestLimits;
  /** Bounds the uploads read and decoded at once (serve/upload-budget.ts). @default a new budget with its defaults */
  budget?: UploadBudget;
}

// The answer's body is CaptionResponse, one of the wire types (core/wire.ts).

/**
 * Uploads of more than 4 megapixels are decoded at reduced size (a short side of 512), so one
 * upload's RGBA stays under 16 MB plus libvips' buffers. Smaller ones, most photos, are decoded at
 * full size, giving exactly the tensor the CLI and the browser give.
 */
const REDUCE_ABOVE_PIXELS = 4_000_000;

const REASON_CODES: Record<ImageDecodeReason, ErrorCode> = {
  empty: 'FROST_ERR_IMAGE_EMPTY',
  'not-an-image': 'FROST_ERR_NOT_AN_IMAGE',
  'unsupported-format': 'FROST_ERR_UNSUPPORTED_IMAGE',
  truncated: 'FROST_ERR_IMAGE_TRUNCATED',
  corrupt: 'FROST_ERR_IMAGE_CORRUPT',
  'too-large': 'FROST_ERR_IMAGE_TOO_LARGE',
};

export function captionRouter({ registry, pool, limits, budget = new UploadBudget() }: CaptionRouterOptions): Router {
  const readUpload = uploadReader(limits.maxImageBytes);
  const router = Router();

  router.post('/v1/caption', async (req: Request, res: Response) => {
    const started = res.locals.startedAt as number;
    // The body's bytes are reserved before it is read and given back once it is decoded.
    const bytes = budget.reserveBytes(bodyBound(req, limits.maxImageBytes));
    let prepared;
    try {
      const upload = await readUpload(req, res);
      const model = registry.get(upload.model, kindFamily(CAPTION));
      const { runtime } = model;
      const { task } = runtime.card;
      const notCaption = () => new HttpError('FROST_ERR_NOT_A_CAPTION_MODEL', { model: model.name, task });
      if (task !== CAPTION.task) throw notCaption();
      assertCaptions(runtime, model.name);
      // Its card's schema requires the image spec of a caption model; checked again for the type.
      const spec = runtime.card.image;
      if (!spec) throw notCaption();
      prepared = await budget.decode(async () => {
        const image = await decodeUpload(upload, limits);
        const pixels = await imagePreprocessThread().run(image.rgba, image.width, image.height, spec);
        const { width, height } = image.original ?? image;
        return { model, upload, image: { width, height, format: image.format }, pixels };
      }, clientGone(res));
    } finally {
      bytes.release();
    }
    const { model, upload, image, pixels } = prepared;
    res.setHeader(MODEL_VERSION_HEADER, modelVersion(model.runtime.card));

    const deadline = requestDeadline(res, limits.timeoutMs);
    try {
      const options = { beam: upload.beam ?? DEFAULT_CAPTION_BEAM };
      const [caption] = await pool.for(model.name, CAPTION).submit([pixels], options, { signal: deadline.signal });
      const body: CaptionResponse = {
        model: model.name,
        caption: caption.text,
        tokens: caption.tokens,
        score: caption.score,
        image: { width: image.width, height: image.height, format: image.format },
        timing: { total_ms: Math.round((performance.now() - started) * 100) / 100 },
      };
      sendJson(res, body);
    } finally {
      deadline.clear();
    }
  });
  return router;
}

/**
 * The most bytes this request's body can hold: its Content-Length, or the largest upload (as base64
 * JSON, the larger of the two encodings) when it is chunked.
 */
function bodyBound(req: Request, maxImageBytes: number): number {
  const most = Math.ceil((maxImageBytes * 4) / 3) + 64 * 1024;
  const length = Number(req.get('content-length'));
  return Number.isSafeInteger(length) && length >= 0 ? Math.min(length, most) : most;
}

/** Aborted when the client hangs up before its answer is sent. */
function clientGone(res: Response): AbortSignal {
  const gone = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) gone.abort(new HttpError('FROST_ERR_CLIENT_CLOSED'));
  });
  return gone.signal;
}

/**
 * Decodes the upload, or says with a 4xx what is wrong with it (naming the client's file name).
 * @throws HttpError with the code of the decoder's reason
 */
async function decodeUpload(upload: CaptionUpload, limits: RequestLimits): Promise<DecodedImage> {
  try {
    return await decodeImage(upload.bytes, {
      maxBytes: limits.maxImageBytes,
      maxPixels: limits.maxImagePixels,
      maxSide: limits.maxImageSide,
      reduceAbovePixels: REDUCE_ABOVE_PIXELS,
    });
  } catch (err) {
    if (!(err instanceof ImageDecodeError)) throw err;
    const detail = upload.filename ? `${upload.filename}: ${err.message}` : err.message;
    throw new HttpError(REASON_CODES[err.reason], { detail }, { cause: err });
  }
}
