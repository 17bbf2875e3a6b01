import { z } from 'zod';
import { completeBodySchema, scoreBodySchema } from './lm-schemas.ts';
import type { RequestLimits } from './schemas.ts';

/**
 * The language-model routes' part of /openapi.json (openapi.ts merges it): request schemas from
 * the zod schemas that validate them (lm-schemas.ts), responses as in core/wire.ts.
 */
const error = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

const common = {
  400: error('A field that fails validation, named in the message (FROST_ERR_INVALID_REQUEST), or malformed JSON'),
  404: error('Unknown language model'),
  413: error('Body larger than the limit'),
  503: error('Queue full (FROST_ERR_OVERLOADED)'),
  504: error('Not answered within the request timeout (FROST_ERR_TIMEOUT)'),
};

function jsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
  return rest;
}

export function lmOpenApi(limits: RequestLimits): { paths: Record<string, unknown>; schemas: Record<string, unknown> } {
  const timing = { type: 'object', properties: { total_ms: { type: 'number' }, tokens: { type: 'integer' } } };
  return {
    paths: {
      '/v1/complete': {
        post: {
          summary: 'Continue a text with a language model (greedy, or seeded sampling)',
          parameters: [
            {
              name: 'stream',
              in: 'query',
              required: false,
              schema: { type: 'string', enum: ['1', 'true'] },
              description: 'Server-sent events: a `token` event ({index, token}) per generated token, then `result`',
            },
          ],
          requestBody: {
            required: true,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/CompleteRequest' } } },
          },
          responses: {
            200: {
              description: 'The continuation',
              content: {
                'application/json': { schema: { $ref: '#/components/schemas/CompleteResponse' } },
                'text/event-stream': { schema: { type: 'string' } },
              },
            },
            ...common,
          },
        },
      },
      '/v1/score': {
        post: {
          summary: "A text's log-probability and perplexity under a language model (</s> included)",
          requestBody: {
            required: true,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/ScoreRequest' } } },
          },
          responses: {
            200: {
              description: 'Scores',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/ScoreResponse' } } },
            },
            ...common,
          },
        },
      },
    },
    schemas: {
      CompleteRequest: jsonSchema(completeBodySchema(limits)),
      CompleteResponse: {
        type: 'object',
        required: ['model', 'completion', 'tokens', 'log_prob', 'finish_reason', 'timing'],
        properties: {
          model: { type: 'string' },
          completion: { type: 'string' },
          tokens: { type: 'array', items: { type: 'string' } },
          log_prob: { type: 'number' },
          finish_reason: { type: 'string', enum: ['eos', 'stop', 'length'] },
          seed: { type: 'integer', description: 'the seed the draws used (sampling only)' },
          timing,
        },
      },
      ScoreRequest: jsonSchema(scoreBodySchema(limits)),
      ScoreResponse: {
        type: 'object',
        required: ['model', 'tokens', 'token_log_probs', 'log_prob', 'perplexity', 'timing'],
        properties: {
          model: { type: 'string' },
          tokens: { type: 'array', items: { type: 'string' } },
          token_log_probs: { type: 'array', items: { type: 'number' } },
          log_prob: { type: 'number' },
          perplexity: { type: 'number' },
          timing,
        },
      },
    },
  };
}
