/**
 * A frozen head's target matrix as frost builds it from a seed: what the PyTorch ports
 * (python/frost_heads, and models trained with them) must reproduce bit for bit.
 */
import assert from 'node:assert/strict';
import { readTargetMatrix } from '../../models/index.ts';
import { buildHead } from '../../models/heads/index.ts';
import { ParamStore } from '../../models/params.ts';

export interface FrozenMatrixSpec {
  head: string;
  seed: number;
  vocab: number;
  dim: number;
  options?: Record<string, number>;
}

/** frost's head's target matrix [|V|, d], row-major, as the head built it from the seed. */
export function frostMatrix(c: FrozenMatrixSpec): Float32Array {
  const params = new ParamStore(c.seed);
  try {
    const embedding = params.variable('decoder/embedding', [c.vocab, 4], { kind: 'zeros' });
    buildHead(c.head, { vocabSize: c.vocab, inputDim: c.dim, embedding, params, seed: c.seed, dropout: 0 }, c.options);
    const m = readTargetMatrix(c.head, params);
    assert.ok(m, `${c.head} has a target matrix`);
    return m.data;
  } finally {
    params.dispose();
  }
}
