import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { z } from 'zod';
import type { ErrorResponse, TranslateRequestBody } from '../core/wire.ts';
import { errorBody, HttpError } from '../serve/errors.ts';
import { DEFAULT_LIMITS, translateBodySchema } from '../serve/schemas.ts';

/** Compiles only when A and B are the same type. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

test('the translate request body the clients send is what the server validates', () => {
  const schema = translateBodySchema(DEFAULT_LIMITS);
  const same: Same<z.input<typeof schema>, TranslateRequestBody> = true;
  assert.ok(same);
  // Every field of the wire type, listed so that adding one without the other fails here.
  const fields: Record<keyof TranslateRequestBody, true> = {
    model: true,
    text: true,
    texts: true,
    beam: true,
    n_best: true,
    max_len: true,
    length_penalty: true,
    allow_unk: true,
  };
  assert.deepEqual(Object.keys(schema.shape).sort(), Object.keys(fields).sort());
  const body: TranslateRequestBody = { model: 'm', texts: ['a dog'], beam: 2, n_best: 2 };
  assert.ok(schema.safeParse(body).success);
});

test('error bodies are the wire ErrorResponse', () => {
  const body: ErrorResponse = errorBody(new HttpError('FROST_ERR_NOT_FOUND', { method: 'GET', path: '/x' }), 'id-1');
  assert.deepEqual(Object.keys(body).sort(), ['code', 'error', 'message', 'request_id', 'statusCode']);
  assert.equal(body.statusCode, 404);
});
