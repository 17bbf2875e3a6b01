/**
 * The OpenAPI 3.1 description served at `GET /openapi.json`. The request body schema is generated
 * from the zod schema that validates requests (schemas.ts), so the two cannot drift; responses are
 * written out here, next to the types in app.ts they describe.
 */
import { z } from 'zod';
import { ERRORS } from './errors.ts';
import { translateBodySchema, type RequestLimits } from './schemas.ts';

const hypothesis = {
  type: 'object',
  required: ['text', 'score', 'log_prob'],
  properties: {
    text: { type: 'string' },
    score: { type: ['number', 'null'], description: 'length-normalised log-probability; null for an impossible hypothesis' },
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
  const { $schema: _drop, ...request } = z.toJSONSchema(translateBodySchema(limits), { io: 'input' }) as Record<string, unknown>;
  return {
    openapi: '3.1.0',
    info: {
      title: 'frost translation server',
      version,
      description: 'Translates with exported frost models. Errors are JSON with a stable FROST_ERR_* code.',
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
              description: 'Answer as server-sent events: `prefix` events ({index, text}) as the best prefix grows, then one `result` event (the JSON answer) or an `error` event',
            },
          ],
          requestBody: { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/TranslateRequest' } } } },
          responses: {
            200: {
              description: 'Translations, one per text, in order',
              content: {
                'application/json': { schema: { $ref: '#/components/schemas/TranslateResponse' } },
                'text/event-stream': { schema: { type: 'string' } },
              },
            },
            400: errorResponse('Malformed JSON, invalid UTF-8, or a field that fails validation (named in the message)'),
            404: errorResponse('Unknown model'),
            413: errorResponse('Body larger than the limit'),
            415: errorResponse('Not application/json'),
            503: { ...errorResponse('Queue full (FROST_ERR_OVERLOADED); see Retry-After'), headers: { 'Retry-After': { schema: { type: 'integer' } } } },
            504: errorResponse('Not answered within the request timeout (FROST_ERR_TIMEOUT)'),
          },
        },
      },
      '/v1/models': {
        get: {
          summary: 'The loaded models (cards, vocabularies reduced to their sizes)',
          responses: { 200: { description: 'Models', content: { 'application/json': { schema: { type: 'object' } } } } },
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
        get: { summary: 'Prometheus metrics', responses: { 200: { description: 'Text exposition format', content: { 'text/plain': {} } } } },
      },
      '/openapi.json': { get: { summary: 'This document', responses: { 200: { description: 'OpenAPI 3.1' } } } },
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
        Error: errorSchema,
      },
    },
  };
}
