/**
 * frost's heads in PyTorch (python/frost_heads, docs/scale.md) against frost's own: every frozen head's matrix bit for
 * bit, for several seeds and shapes (non-powers of two, |V| < d, a 58,101-word vocabulary), and every head's logits,
 * on the same inputs and parameters, within 1e-5 of the largest logit. One Debian python3 process runs every case
 * (`python3 -m frost_heads.dump --batch`); without PyTorch the tests fail saying what to install (.ci/run installs
 * python3-torch), as the ONNX checks do without python3-onnx.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { getHeadDefinition, headNames } from '../models/index.ts';
import { buildHead } from '../models/heads/index.ts';
import { ParamStore } from '../models/params.ts';
import { SeededRandom } from '../core/random.ts';
import { initBackend } from '../train/backend/select.ts';
import { frostMatrix } from './helpers/frost-matrix.ts';
import { findTorchPython } from './helpers/torch-python.ts';

const PYTHON_DIR = join(import.meta.dirname, '..', 'python');
const FROZEN = ['fixed-uniform', 'fixed-l2', 'hadamard'];

interface Tensor {
  shape: number[];
  base64: string;
}
const encode = (data: Float32Array, shape: number[]): Tensor => ({
  shape,
  base64: Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('base64'),
});
/** A copy, so the floats are aligned wherever Node put the bytes. */
const floats = (bytes: Uint8Array) => new Float32Array(Uint8Array.from(bytes).buffer);
const decode = (t: Tensor) => floats(Buffer.from(t.base64, 'base64'));

interface MatrixCase {
  head: string;
  seed: number;
  vocab: number;
  dim: number;
  options?: Record<string, number>;
}

/** Seeds across the uint32 range, on shapes with |V| a power of two or not, below d and far above it. */
const MATRIX_CASES: MatrixCase[] = [
  ...FROZEN.flatMap((head) =>
    [0, 1, 1234, 0xffffffff].flatMap((seed) =>
      [
        [37, 8],
        [6, 16],
        [64, 32],
        [1000, 64],
      ].map(([vocab, dim]) => ({ head, seed, vocab, dim })),
    ),
  ),
  ...FROZEN.map((head) => ({ head, seed: 7, vocab: 58_101, dim: 64 })),
  // A span (7.4) that float32 cannot hold exactly: frost rounds hi - lo once, so must the port.
  { head: 'fixed-uniform', seed: 5, vocab: 37, dim: 8, options: { limit: 3.7 } },
];

interface ForwardCase {
  head: string;
  seed: number;
  vocab: number;
  dim: number;
  embeddingDim: number;
  options?: Record<string, number>;
}

/** Every head with d = e and with d ≠ e (a learned projection), and the options that change the function. */
const FORWARD_CASES: ForwardCase[] = [
  ...headNames().flatMap((head) => [
    { head, seed: 11, vocab: 37, dim: 8, embeddingDim: 8 },
    { head, seed: 12, vocab: 50, dim: 12, embeddingDim: 6 },
  ]),
  { head: 'fixed-uniform', seed: 13, vocab: 37, dim: 8, embeddingDim: 8, options: { limit: 0.25 } },
  { head: 'shared-cosine', seed: 14, vocab: 37, dim: 8, embeddingDim: 8, options: { initialScale: 3 } },
  { head: 'drill', seed: 15, vocab: 37, dim: 8, embeddingDim: 6, options: { layers: 3 } },
];
const N = 5;

interface Forward {
  logits: Float32Array;
  /** The head's learnable parameters as frost built them, before they were changed to exercise every term. */
  initial: Map<string, Float32Array>;
}

/** frost's head on fresh inputs, its parameters moved off their initial values; and the job asking Python the same. */
function frostForward(c: ForwardCase, out: string): { frost: Forward; job: object } {
  let made: { frost: Forward; job: object } | undefined;
  tf.tidy(() => {
    const params = new ParamStore(c.seed);
    const embedding = params.variable('decoder/embedding', [c.vocab, c.embeddingDim], { kind: 'uniform', limit: 0.5 });
    const ctx = { vocabSize: c.vocab, inputDim: c.dim, embedding, params, seed: c.seed, dropout: 0.1 };
    const head = buildHead(c.head, ctx, c.options);
    const rng = new SeededRandom(c.seed, 'pytorch-heads-test');
    const initial = new Map<string, Float32Array>();
    const moved: Record<string, Tensor> = {};
    for (const [name, v] of params.learnable) {
      if (!name.startsWith('head/')) continue;
      initial.set(name, (v.dataSync() as Float32Array).slice());
      // Zero biases and a constant scale would hide a term the port got wrong.
      const values = Float32Array.from({ length: v.size }, () => rng.normal() * 0.5 + (name === 'head/scale' ? 2 : 0));
      v.assign(tf.tensor(values, v.shape));
      moved[name] = encode(values, v.shape);
    }
    const f = Float32Array.from({ length: N * c.dim }, () => rng.normal());
    const logits = head.logits(tf.tensor2d(f, [N, c.dim]), false).dataSync() as Float32Array;
    const job = {
      kind: 'forward',
      ...c,
      embedding_dim: c.embeddingDim,
      f: encode(f, [N, c.dim]),
      embedding: encode(embedding.dataSync() as Float32Array, [c.vocab, c.embeddingDim]),
      params: moved,
      out,
    };
    params.dispose();
    made = { frost: { logits: logits.slice(), initial }, job };
  });
  return made!;
}

interface BatchResult {
  ok: boolean;
  error?: string;
  initial?: Record<string, Tensor>;
  state_dict?: string[];
}

let python: string;
let dir: string;
let results: BatchResult[];
let heads: Record<string, { frozen: boolean }>;
const forwards: Forward[] = [];
const label = (c: MatrixCase | ForwardCase) => JSON.stringify(c);

before(async () => {
  python = findTorchPython();
  await initBackend({ prefer: 'wasm', quiet: true });
  dir = mkdtempSync(join(tmpdir(), 'frost-pytorch-heads-'));
  const jobs: object[] = MATRIX_CASES.map((c, i) => ({ kind: 'matrix', ...c, out: join(dir, `matrix-${i}.f32`) }));
  for (const [i, c] of FORWARD_CASES.entries()) {
    const { frost, job } = frostForward(c, join(dir, `logits-${i}.f32`));
    forwards.push(frost);
    jobs.push(job);
  }
  writeFileSync(join(dir, 'jobs.json'), JSON.stringify({ jobs }));
  const run = spawnSync(python, ['-m', 'frost_heads.dump', '--batch', join(dir, 'jobs.json')], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    env: { ...process.env, PYTHONPATH: PYTHON_DIR, PYTHONDONTWRITEBYTECODE: '1' },
  });
  assert.equal(run.status, 0, `frost_heads.dump failed:\n${run.stderr}`);
  ({ results, heads } = JSON.parse(run.stdout) as { results: BatchResult[]; heads: typeof heads });
  assert.equal(results.length, jobs.length);
});

after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('frost_heads (PyTorch) and frost', () => {
  test('the package has every head frost registers, frozen where frost is', () => {
    assert.deepEqual(Object.keys(heads).sort(), headNames().sort());
    for (const name of headNames()) assert.equal(heads[name]!.frozen, getHeadDefinition(name).frozen, name);
  });

  test("every frozen head regenerates frost's matrix bit for bit (several seeds and shapes)", () => {
    for (const [i, c] of MATRIX_CASES.entries()) {
      assert.ok(results[i]!.ok, `${label(c)}:\n${results[i]!.error}`);
      const ours = readFileSync(join(dir, `matrix-${i}.f32`));
      const frost = frostMatrix(c);
      const theirs = Buffer.from(frost.buffer, frost.byteOffset, frost.byteLength);
      assert.equal(ours.length, theirs.length, `${label(c)}: bytes`);
      if (!ours.equals(theirs)) {
        const a = new Uint32Array(floats(ours).buffer);
        const b = new Uint32Array(frost.buffer, frost.byteOffset, frost.length);
        const at = a.findIndex((x, k) => x !== b[k]);
        assert.fail(
          `${label(c)}: element ${at} is 0x${a[at]!.toString(16)} in PyTorch, 0x${b[at]!.toString(16)} in frost`,
        );
      }
    }
  });

  test('every head starts from the parameters frost gives it for the seed, and stores no frozen matrix', () => {
    for (const [i, c] of FORWARD_CASES.entries()) {
      const r = results[MATRIX_CASES.length + i]!;
      assert.ok(r.ok, `${label(c)}:\n${r.error}`);
      const frost = forwards[i]!.initial;
      assert.deepEqual(Object.keys(r.initial!).sort(), [...frost.keys()].sort(), `${label(c)}: learnable parameters`);
      // The state_dict holds the learnable parameters only: frozen matrices are rebuilt from the seed.
      assert.deepEqual(
        r.state_dict!.map((k) => `head/${k}`).sort(),
        [...frost.keys()].sort(),
        `${label(c)}: state_dict`,
      );
      for (const [name, values] of frost) {
        const ours = decode(r.initial![name]!);
        assert.deepEqual(new Uint32Array(ours.buffer), new Uint32Array(values.buffer), `${label(c)}: ${name}`);
      }
    }
  });

  test("every head's logits equal frost's on the same inputs and parameters (within 1e-5 of the largest)", () => {
    for (const [i, c] of FORWARD_CASES.entries()) {
      assert.ok(results[MATRIX_CASES.length + i]!.ok, `${label(c)}:\n${results[MATRIX_CASES.length + i]!.error}`);
      const ours = floats(readFileSync(join(dir, `logits-${i}.f32`)));
      const frost = forwards[i]!.logits;
      assert.equal(ours.length, N * c.vocab, `${label(c)}: logits`);
      // The GEMMs add in different orders (XNNPACK against PyTorch's BLAS): a few float32 ulps of the largest logit.
      const scale = frost.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
      assert.ok(scale > 0, label(c));
      const worst = ours.reduce((m, x, k) => Math.max(m, Math.abs(x - frost[k]!)), 0);
      assert.ok(worst <= 1e-5 * scale, `${label(c)}: |PyTorch - frost| reaches ${worst} (largest logit ${scale})`);
    }
  });

  test('the fairseq --user-dir extension parses (fairseq itself is not installable here, so it is not run)', () => {
    const check = spawnSync(
      python,
      [
        '-c',
        'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])',
        join(PYTHON_DIR, 'fairseq_frost', '__init__.py'),
      ],
      { encoding: 'utf8' },
    );
    assert.equal(check.status, 0, check.stderr);
  });
});
