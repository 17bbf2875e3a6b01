/**
 * The OpenAPI 3.1 description served at `GET /openapi.json`. The JSON request body schemas are
 * generated from the zod schemas that validate requests (schemas.ts, caption-upload.ts), so the two
 * cannot drift; responses are written out here; the types they describe are in translate-router.ts,
 * caption-route.ts and models-router.ts.
 */
import { z } from 'zod';
import { captionJsonSchema } from './caption-upload.ts';
import { ERRORS } from './errors.ts';
import { lmOpenApi } from './openapi-lm.ts';
import { MAX_BEAM, translateBodySchema, type RequestLimits } from './schemas.ts';

const hypothesis = {
  type: 'object',
  required: ['text', 'score', 'log_prob'],
  properties: {
    text: { type: 'string' },
    score: {
      type: ['number', 'null'],
      description: 'length-normalised log-probability; null for an impossible hypothesis',
    },
    log_prob: { type: ['number', 'null'] },
  },
} as const;

const errorSchema = {
  type: 'object',
  required: ['error', 'code', 'message', 'statusCode'],
  properties: {
    error: { type: 'string', description: 'HTTP reason phrase' },
    code: { type: 'string', enum: Object.keys(ERRORS) },
    message: { type: 'string' },
    statusCode: { type: 'integer' },
    request_id: { type: 'string' },
  },
} as const;

const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

/** Builds the document for the given limits (they appear as maxLength/maxItems in the request schema). */
export function openApiDocument(limits: RequestLimits, version = '0.1.0'): Record<string, unknown> {
  const { $schema: _drop, ...request } = z.toJSONSchema(translateBodySchema(limits), { io: 'input' }) as Record<
    string,
    unknown
  >;
  const { $schema: _drop2, ...captionJson } = z.toJSONSchema(captionJsonSchema, { io: 'input' }) as Record<
    string,
    unknown
  >;
  const lm = lmOpenApi(limits);
  return {
    openapi: '3.1.0',
    info: {
      title: 'frost server',
      version,
      description:
        'Translates text and captions images with exported frost models. Errors are JSON with a stable FROST_ERR_* code.',
    },
    paths: {
      '/v1/translate': {
        post: {
          summary: 'Translate one text or a list of texts',
          parameters: [
            {
              name: 'stream',
              in: 'query',
              required: false,
              schema: { type: 'string', enum: ['1', 'true'] },
              description:
                'Answer as server-sent events: `prefix` events ({index, text}) as the best prefix grows, then one `result` event (the JSON answer) or an `error` event',
            },
          ],
          requestBody: {
            required: true,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/TranslateRequest' } } },
          },
          responses: {
            200: {
              description: 'Translations, one per text, in order',
              content: {
                'application/json': { schema: { $ref: '#/components/schemas/TranslateResponse' } },
                'text/event-stream': { schema: { type: 'string' } },
              },
            },
            400: errorResponse(
              'Malformed JSON, invalid UTF-8, a field that fails validation (named in the message), or a caption model (FROST_ERR_NOT_A_TRANSLATION_MODEL)',
            ),
            404: errorResponse('Unknown model'),
            413: errorResponse('Body larger than the limit'),
            415: errorResponse('Not application/json'),
            500: errorResponse(
              'The decoding thread died during the request (FROST_ERR_DECODER_CRASHED; it is restarted, a retry can succeed), or an internal error',
            ),
            503: {
              ...errorResponse('Queue full (FROST_ERR_OVERLOADED); see Retry-After'),
              headers: { 'Retry-After': { schema: { type: 'integer' } } },
            },
            504: errorResponse('Not answered within the request timeout (FROST_ERR_TIMEOUT)'),
          },
        },
      },
      '/v1/caption': {
        post: {
          summary: 'Caption one JPEG or PNG image',
          description:
            'The image is recognised by its bytes (not its name or Content-Type), decoded, centre-cropped, resized and ' +
            "normalised with the model card's image spec, then captioned by beam search. Concurrent requests with the " +
            'same beam are decoded as one batch.',
          requestBody: {
            required: true,
            content: {
              'multipart/form-data': {
                schema: {
                  type: 'object',
                  required: ['image'],
                  properties: {
                    image: {
                      type: 'string',
                      format: 'binary',
                      description: `the JPEG or PNG file, at most ${limits.maxImageBytes} bytes and ${limits.maxImagePixels} pixels`,
                    },
                    model: {
                      type: 'string',
                      description: 'the model to caption with; the default model when left out',
                    },
                    beam: {
                      type: 'integer',
                      minimum: 1,
                      maximum: MAX_BEAM,
                      description: "beam width; 10 (the paper's) when left out",
                    },
                  },
                },
                encoding: { image: { contentType: 'image/jpeg, image/png' } },
              },
              'application/json': { schema: { $ref: '#/components/schemas/CaptionRequest' } },
            },
          },
          responses: {
            200: {
              description: 'The caption',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/CaptionResponse' } } },
            },
            400: errorResponse(
              'No image (FROST_ERR_NO_IMAGE), an empty (FROST_ERR_IMAGE_EMPTY), truncated (FROST_ERR_IMAGE_TRUNCATED) or ' +
                'corrupt (FROST_ERR_IMAGE_CORRUPT) image, bad base64 or fields (FROST_ERR_INVALID_REQUEST), malformed JSON, ' +
                'or a translation model (FROST_ERR_NOT_A_CAPTION_MODEL)',
            ),
            404: errorResponse('Unknown model'),
            413: errorResponse(
              `An image over ${limits.maxImageBytes} bytes or ${limits.maxImagePixels} pixels (FROST_ERR_IMAGE_TOO_LARGE), or a JSON body over its limit (FROST_ERR_BODY_TOO_LARGE)`,
            ),
            415: errorResponse(
              'Not an image, e.g. a PDF renamed .jpg (FROST_ERR_NOT_AN_IMAGE); an image format other than JPEG and PNG ' +
                '(FROST_ERR_UNSUPPORTED_IMAGE); neither multipart/form-data nor application/json (FROST_ERR_CAPTION_CONTENT_TYPE)',
            ),
            500: errorResponse(
              'The decoding thread died during the request (FROST_ERR_DECODER_CRASHED), or an internal error',
            ),
            501: errorResponse(
              "The caption model's runtime cannot caption (FROST_ERR_CAPTION_UNAVAILABLE; embedded apps only)",
            ),
            503: {
              ...errorResponse('Queue full (FROST_ERR_OVERLOADED); see Retry-After'),
              headers: { 'Retry-After': { schema: { type: 'integer' } } },
            },
            504: errorResponse('Not answered within the request timeout (FROST_ERR_TIMEOUT)'),
          },
        },
      },
      '/v1/models': {
        get: {
          summary: 'The loaded models (cards, vocabularies reduced to their sizes)',
          responses: {
            200: { description: 'Models', content: { 'application/json': { schema: { type: 'object' } } } },
          },
        },
      },
      '/healthz': {
        get: { summary: 'Liveness: the process answers', responses: { 200: { description: 'Alive' } } },
      },
      '/readyz': {
        get: {
          summary: 'Readiness: models are loaded and the server is not shutting down',
          responses: { 200: { description: 'Ready' }, 503: errorResponse('Not ready (FROST_ERR_NOT_READY)') },
        },
      },
      '/metrics': {
        get: {
          summary: 'Prometheus metrics',
          responses: { 200: { description: 'Text exposition format', content: { 'text/plain': {} } } },
        },
      },
      '/openapi.json': { get: { summary: 'This document', responses: { 200: { description: 'OpenAPI 3.1' } } } },
      ...lm.paths,
    },
    components: {
      schemas: {
        TranslateRequest: request,
        Hypothesis: hypothesis,
        TranslateResponse: {
          type: 'object',
          required: ['model', 'translations', 'timing'],
          properties: {
            model: { type: 'string' },
            translations: {
              type: 'array',
              items: {
                allOf: [{ $ref: '#/components/schemas/Hypothesis' }],
                properties: { n_best: { type: 'array', items: { $ref: '#/components/schemas/Hypothesis' } } },
              },
            },
            timing: {
              type: 'object',
              required: ['total_ms', 'tokens'],
              properties: { total_ms: { type: 'number' }, tokens: { type: 'integer' } },
            },
          },
        },
        CaptionRequest: captionJson,
        CaptionResponse: {
          type: 'object',
          required: ['model', 'caption', 'tokens', 'score', 'image', 'timing'],
          properties: {
            model: { type: 'string' },
            caption: { type: 'string', description: 'the words joined by spaces' },
            tokens: { type: 'array', items: { type: 'string' } },
            score: { type: 'number', description: 'length-normalised log-probability' },
            image: {
              type: 'object',
              required: ['width', 'height', 'format'],
              description: 'the upload as decoded (EXIF orientation applied), before preprocessing',
              properties: {
                width: { type: 'integer' },
                height: { type: 'integer' },
                format: { type: 'string', enum: ['jpeg', 'png'] },
              },
            },
            timing: { type: 'object', required: ['total_ms'], properties: { total_ms: { type: 'number' } } },
          },
        },
        ...lm.schemas,
        Error: errorSchema,
      },
    },
  };
}
