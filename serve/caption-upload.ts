/**
 * Reads the image and options of a `POST /v1/caption` request, sent either as `multipart/form-data`
 * (file field `image`, optional fields `model` and `beam`: what `curl -F image=@photo.jpg` sends)
 * or as JSON `{ "image": base64, "model"?, "beam"? }`. Only the transport is checked here; whether
 * the bytes are an image is core/image's business.
 */
import busboy from 'busboy';
import express, { type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { clip, HttpError } from './errors.ts';
import { formatIssues, MAX_BEAM, modelName } from './schemas.ts';

/** An upload, whichever way it came. */
export interface CaptionUpload {
  bytes: Buffer;
  /** The client's file name (multipart only), used in messages. */
  filename?: string;
  model?: string;
  beam?: number;
}

/** The JSON body, as validated; openapi.ts documents it from this schema. */
export const captionJsonSchema = z.strictObject({
  model: modelName.optional().describe('the model to caption with; the default model when left out'),
  image: z
    .string()
    .min(1, 'must be a non-empty base64 string')
    .describe('the JPEG or PNG file, base64; a data:image/…;base64, prefix is accepted'),
  beam: z.int().min(1).max(MAX_BEAM).optional().describe("beam width; 10 (the paper's) when left out"),
});

/** A form's beam: decimal digits only (Number() would also take '0x10', '1e1' or ' 4 '). */
const beamField = z
  .string()
  .regex(/^\d{1,3}$/)
  .transform(Number)
  .pipe(z.int().min(1).max(MAX_BEAM));
/** The form fields read; any other is refused, as the JSON body's unknown keys are. */
const FORM_FIELDS = new Set(['image', 'model', 'beam']);
/** Parts a form may have: the image and the two text fields, with room to spare. */
const MAX_FORM_PARTS = 10;

/** Reads uploads of at most `maxBytes` of image. */
export function uploadReader(maxBytes: number): (req: Request, res: Response) => Promise<CaptionUpload> {
  // base64 is 4/3 the size, plus room for the other fields.
  const json = express.json({ limit: Math.ceil((maxBytes * 4) / 3) + 64 * 1024 });
  return (req, res) => {
    const type = req.get('content-type') ?? '';
    const encoding = (req.get('content-encoding') ?? 'identity').toLowerCase();
    // busboy reads the bytes as they come: a compressed form would only fail as a malformed one.
    if (/^multipart\/form-data/i.test(type) && encoding !== 'identity') {
      throw new HttpError('FROST_ERR_UNSUPPORTED_ENCODING', { encoding: JSON.stringify(clip(encoding)) });
    }
    if (/^multipart\/form-data/i.test(type)) return readMultipart(req, maxBytes);
    if (/^application\/json/i.test(type)) return readJson(req, res, json);
    throw new HttpError('FROST_ERR_CAPTION_CONTENT_TYPE', { contentType: type || '(none)' });
  };
}

async function readJson(req: Request, res: Response, json: RequestHandler): Promise<CaptionUpload> {
  await new Promise<void>((resolve, reject) => json(req, res, (err?: unknown) => (err ? reject(err) : resolve())));
  const parsed = captionJsonSchema.safeParse(req.body);
  if (!parsed.success) {
    const missing = parsed.error.issues.some((i) => i.path[0] === 'image' && i.code === 'invalid_type');
    if (missing)
      throw new HttpError('FROST_ERR_NO_IMAGE', { detail: 'the JSON body has no "image" (base64 JPEG or PNG)' });
    throw new HttpError('FROST_ERR_INVALID_REQUEST', { issues: formatIssues(parsed.error.issues) });
  }
  const b64 = parsed.data.image.replace(/^data:[\w/+.-]+;base64,/, '').replace(/\s+/g, '');
  // Buffer.from(…, 'base64') skips what is not base64 without a word: refuse it instead.
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 === 1) {
    throw new HttpError('FROST_ERR_INVALID_REQUEST', { issues: 'image: not valid base64' });
  }
  return { bytes: Buffer.from(b64, 'base64'), model: parsed.data.model, beam: parsed.data.beam };
}

/**
 * Streams a multipart body: one file field `image` of at most `maxBytes` (the rest of a larger file
 * is read and dropped, so the client still gets its 413), and small text fields `model` and `beam`.
 */
function readMultipart(req: Request, maxBytes: number): Promise<CaptionUpload> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      const limits = { files: 1, fileSize: maxBytes, fields: MAX_FORM_PARTS, fieldSize: 256, parts: MAX_FORM_PARTS };
      parser = busboy({ headers: req.headers, limits });
    } catch (err) {
      reject(
        new HttpError('FROST_ERR_INVALID_REQUEST', { issues: `multipart: ${(err as Error).message}` }, { cause: err }),
      );
      return;
    }
    const upload: Omit<CaptionUpload, 'bytes'> = {};
    let chunks: Buffer[] | undefined;
    // The first problem is the one reported; the body is still read to its end.
    let failure: HttpError | undefined;
    // busboy drops what is past its limits without a word; refuse the form instead.
    const tooMany = (what: string) => () => {
      failure ??= new HttpError('FROST_ERR_INVALID_REQUEST', { issues: `multipart: more than ${what}` });
    };
    parser.on('partsLimit', tooMany(`${MAX_FORM_PARTS} parts`));
    parser.on('fieldsLimit', tooMany(`${MAX_FORM_PARTS} fields`));
    parser.on('filesLimit', tooMany("one file (field 'image')"));
    const unknownField = (name: string) => {
      failure ??= new HttpError('FROST_ERR_INVALID_REQUEST', {
        issues: `multipart: unknown field '${clip(name)}' (expected image, model, beam)`,
      });
    };
    parser.on('file', (name, stream, info) => {
      // A form cut short fails the file stream too ("Unexpected end of file"); the parser reports it.
      stream.on('error', () => undefined);
      if (!FORM_FIELDS.has(name)) unknownField(name);
      if (name !== 'image') {
        stream.resume();
        return;
      }
      const mine: Buffer[] = [];
      chunks = mine;
      if (info.filename) upload.filename = info.filename;
      stream.on('data', (chunk: Buffer) => mine.push(chunk));
      stream.on('limit', () => {
        const detail = `${info.filename ?? 'image'}: larger than the limit of ${maxBytes} bytes`;
        failure ??= new HttpError('FROST_ERR_IMAGE_TOO_LARGE', { detail });
      });
    });
    parser.on('field', (name, value) => {
      if (name === 'image')
        failure ??= new HttpError('FROST_ERR_NO_IMAGE', { detail: "the form's field 'image' is text, not a file" });
      else if (!FORM_FIELDS.has(name)) unknownField(name);
      if (name === 'model') {
        const model = modelName.safeParse(value);
        if (model.success) upload.model = model.data;
        else
          failure ??= new HttpError('FROST_ERR_INVALID_REQUEST', {
            issues: `model: ${model.error.issues[0]!.message}`,
          });
      }
      if (name === 'beam') {
        const beam = beamField.safeParse(value);
        if (beam.success) upload.beam = beam.data;
        else
          failure ??= new HttpError('FROST_ERR_INVALID_REQUEST', {
            issues: `beam: must be an integer from 1 to ${MAX_BEAM}, got '${clip(value)}'`,
          });
      }
    });
    parser.on('error', (err: Error) => {
      // A client that hung up mid-form reads as a form that ends early; say what happened instead.
      if (req.destroyed && !req.complete) reject(new HttpError('FROST_ERR_CLIENT_CLOSED', {}, { cause: err }));
      else reject(new HttpError('FROST_ERR_INVALID_REQUEST', { issues: `multipart: ${err.message}` }, { cause: err }));
    });
    // The chunks are joined here rather than on the file stream's own 'close', which may come later.
    parser.on('close', () => {
      if (failure) reject(failure);
      else if (!chunks) reject(new HttpError('FROST_ERR_NO_IMAGE', { detail: "the form has no file field 'image'" }));
      else resolve({ ...upload, bytes: Buffer.concat(chunks) });
    });
    // A hang-up ends the body without an end to the form, and busboy then waits for ever.
    req.once('close', () => {
      if (req.complete) return;
      req.unpipe(parser);
      parser.destroy();
      reject(new HttpError('FROST_ERR_CLIENT_CLOSED'));
    });
    req.pipe(parser);
  });
}
