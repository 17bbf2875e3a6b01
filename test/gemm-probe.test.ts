/**
 * The per-shape GEMM choice (train/backend/kernels/gemm-probe.ts): the dispatcher sends each shape class to the
 * runner chosen for it (XNNPACK's classes stay in frost's wasm kernel) and gives the products a float64 reference
 * gives; the probe's cache is used, invalidated when its key changes, and a damaged cache file is ignored with a
 * warning.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { initBackend } from '../train/backend/select.ts';
import { GEMM_PROVIDERS } from '../train/backend/kernels/gemm-providers.ts';
import {
  BUCKET_SHAPES,
  probeShapes,
  shapeClass,
  type ProbeCandidate,
  type ProbeShape,
} from '../train/backend/kernels/gemm-classes.ts';
import { makeDispatcher } from '../train/backend/kernels/gemm-dispatch.ts';
import { chooseRunners, type GemmChoiceRecord } from '../train/backend/kernels/gemm-probe.ts';
import {
  nativeGemm,
  setNativeGemm,
  type GemmRunnerName,
  type NativeGemm,
} from '../train/backend/kernels/native-gemm.ts';

const dir = mkdtempSync(join(tmpdir(), 'frost-gemm-probe-'));
after(() => rmSync(dir, { recursive: true, force: true }));

await initBackend({ prefer: 'wasm', quiet: true, nativeGemm: false });

/** A runner that computes in float64 and records the products it ran. */
function fakeRunner(provider: 'blas' | 'mlas', calls: string[], description = `fake ${provider}`): NativeGemm {
  return {
    provider,
    threads: 2,
    description,
    minMacs: 2 ** 10,
    minEntryMacs: 2 ** 8,
    gemm(A, B, Y, M, K, N, tA, tB) {
      calls.push(shapeClass(M, K, N, tA, tB));
      reference(A, B, Y, M, K, N, tA, tB);
    },
    dispose() {},
  };
}

function reference(
  A: Float32Array,
  B: Float32Array,
  Y: Float32Array | Float64Array,
  M: number,
  K: number,
  N: number,
  tA: boolean,
  tB: boolean,
): void {
  for (let i = 0; i < M; i++)
    for (let j = 0; j < N; j++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += A[tA ? k * M + i : i * K + k] * B[tB ? j * K + k : k * N + j];
      Y[i * N + j] = s;
    }
}

/** A record that hands the classes round-robin to `names`. */
function roundRobin(names: GemmRunnerName[]): GemmChoiceRecord {
  return {
    mode: 'probe',
    source: 'probe',
    cacheFile: null,
    probedAt: new Date(0).toISOString(),
    loadPerCore: 0,
    key: { version: 0, cpu: 'test', isa: [], platform: 'test', arch: 'test', threads: 2, providers: [], env: {} },
    classes: probeShapes().map((s, i) => ({ class: s.class, shape: '', chosen: names[i % names.length], ms: {} })),
  };
}

test('the dispatcher sends each shape class to its chosen runner and declines the classes XNNPACK won', () => {
  const calls = { blas: [] as string[], mlas: [] as string[] };
  const record = roundRobin(['blas', 'mlas', 'xnnpack']);
  const d = makeDispatcher([fakeRunner('blas', calls.blas), fakeRunner('mlas', calls.mlas)], record);
  assert.equal(d.provider, 'probe');
  for (const c of record.classes) {
    const s = probeShapes().find((x) => x.class === c.class)!;
    const accepted = d.accepts!(s.M, s.K, s.N, s.tA, s.tB, false);
    assert.equal(accepted, c.chosen !== 'xnnpack', c.class);
    if (!accepted) continue;
    // Tiny operands: the runner is chosen by the class of (M, K, N), and the fake computes whatever it is given.
    const [M, K, N] = [2, 3, 2];
    const runnerCalls = calls[c.chosen as 'blas' | 'mlas'];
    const before = runnerCalls.length;
    const d2 = makeDispatcher([fakeRunner('blas', calls.blas), fakeRunner('mlas', calls.mlas)], {
      ...record,
      classes: [{ ...c, class: shapeClass(M, K, N, s.tA, s.tB) }],
    });
    d2.gemm(new Float32Array(6), new Float32Array(6), new Float32Array(4), M, K, N, s.tA, s.tB);
    assert.equal(runnerCalls.length, before + 1, `${c.class} went to ${c.chosen}`);
  }
  // Below a runner's own thresholds a class it won still stays in XNNPACK.
  const small = makeDispatcher([fakeRunner('blas', [])], roundRobin(['blas']));
  assert.equal(small.accepts!(4, 4, 4, false, false, false), false, 'below minMacs');
  assert.equal(small.accepts!(8, 8, 8, false, false, true), true, 'a batched entry above minEntryMacs');
});

test('through frost BatchMatMul, every class on its chosen runner (real providers and XNNPACK) matches float64', () => {
  const runners: NativeGemm[] = [];
  for (const p of GEMM_PROVIDERS) {
    const r = p.load(2);
    if (!(r instanceof Error)) runners.push(r);
  }
  assert.ok(runners.length > 0, 'no native GEMM provider loads here');
  const ran = new Map<string, string>();
  const spied = runners.map((r): NativeGemm => ({
    ...r,
    gemm(A, B, Y, M, K, N, tA, tB) {
      ran.set(shapeClass(M, K, N, tA, tB), r.provider);
      r.gemm(A, B, Y, M, K, N, tA, tB);
    },
  }));
  const names: GemmRunnerName[] = [...runners.map((r) => r.provider as GemmRunnerName), 'xnnpack'];
  const record = roundRobin(names);
  const previous = setNativeGemm(makeDispatcher(spied, record));
  try {
    // One product per class of the five smaller buckets (the largest is too slow for a float64 loop in JS).
    const sizes: [number, number, number][] = [
      [32, 64, 64],
      [64, 128, 128],
      [64, 512, 256],
      [64, 256, 1024],
      [128, 1024, 1024],
    ];
    assert.equal(sizes.length, BUCKET_SHAPES.length - 1);
    let seed = 5;
    const rand = (n: number) =>
      Float32Array.from(
        { length: n },
        () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32) * 2 - 1,
      );
    for (const [M, K, N] of sizes)
      for (const tA of [false, true])
        for (const tB of [false, true]) {
          const cls = shapeClass(M, K, N, tA, tB);
          const chosen = record.classes.find((c) => c.class === cls)!.chosen;
          const A = rand(M * K);
          const B = rand(K * N);
          const y = tf.tidy(() =>
            tf.matMul(tf.tensor(A, tA ? [K, M] : [M, K]), tf.tensor(B, tB ? [N, K] : [K, N]), tA, tB),
          );
          const got = y.dataSync();
          y.dispose();
          const want = new Float64Array(M * N);
          reference(A, B, want, M, K, N, tA, tB);
          let worst = 0;
          for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
          assert.ok(worst < 1e-5 * K, `${cls} (${chosen}): worst error ${worst}`);
          // Below the chosen runner's minMacs a product stays in XNNPACK, as without the probe.
          const runner = runners.find((r) => r.provider === chosen);
          const expected = runner != null && M * K * N >= runner.minMacs ? chosen : undefined;
          assert.equal(ran.get(cls), expected, `${cls} ran on ${ran.get(cls)}`);
        }
  } finally {
    setNativeGemm(previous);
    for (const r of runners) r.dispose();
  }
});

/** A timer that makes blas fastest on the two largest buckets, mlas in the middle, XNNPACK on the smallest. */
function fakeTimer(counter: { calls: number }) {
  return (c: ProbeCandidate, s: ProbeShape) => {
    counter.calls++;
    const bucket = Number(s.class.split(':')[1]);
    const fastest: GemmRunnerName = bucket === 0 ? 'xnnpack' : bucket >= 4 ? 'blas' : 'mlas';
    return c.name === fastest ? 1 : 2;
  };
}

test('the probe picks the fastest runner per class, caches it, and probes again when its key changes', () => {
  const file = join(dir, 'cache-a', 'gemm-probe.json');
  const runners = [fakeRunner('blas', []), fakeRunner('mlas', [])];
  const counter = { calls: 0 };
  const warnings: string[] = [];
  const warn = (l: string) => warnings.push(l);
  const first = chooseRunners(2, runners, fakeTimer(counter), { cacheFile: file, warn, loadPerCore: () => 0.2 });
  assert.equal(first.source, 'probe');
  assert.ok(counter.calls > 0);
  for (const c of first.classes) {
    const bucket = Number(c.class.split(':')[1]);
    assert.equal(c.chosen, bucket === 0 ? 'xnnpack' : bucket >= 4 ? 'blas' : 'mlas', c.class);
    // XNNPACK is timed only in the small buckets.
    assert.equal('xnnpack' in c.ms, bucket < 3, c.class);
  }
  assert.equal(first.classes.length, 24);

  const again = chooseRunners(2, runners, fakeTimer(counter), { cacheFile: file, warn, loadPerCore: () => 0.2 });
  const callsAfterFirst = counter.calls;
  assert.equal(again.source, 'cache');
  assert.deepEqual(again.classes, first.classes);
  assert.equal(counter.calls, callsAfterFirst, 'a cached choice is not measured again');

  // Another key (a library's description, the thread count, an environment variable it reads): probed again.
  const other = chooseRunners(2, [fakeRunner('blas', [], 'fake blas, other kernels'), runners[1]], fakeTimer(counter), {
    cacheFile: file,
    warn,
    loadPerCore: () => 0.2,
  });
  assert.equal(other.source, 'probe');
  assert.ok(counter.calls > callsAfterFirst);
  const saved = process.env.OPENBLAS_CORETYPE;
  process.env.OPENBLAS_CORETYPE = 'SomethingElse';
  try {
    assert.equal(
      chooseRunners(2, runners, fakeTimer(counter), { cacheFile: file, warn, loadPerCore: () => 0.2 }).source,
      'probe',
    );
  } finally {
    if (saved == null) delete process.env.OPENBLAS_CORETYPE;
    else process.env.OPENBLAS_CORETYPE = saved;
  }
  assert.equal(
    chooseRunners(3, runners, fakeTimer(counter), { cacheFile: file, warn, loadPerCore: () => 0.2 }).source,
    'probe',
  );
  // Each key keeps its own entry: the first is still cached.
  assert.equal(
    chooseRunners(2, runners, fakeTimer(counter), { cacheFile: file, warn, loadPerCore: () => 0.2 }).source,
    'cache',
  );
  const cache = JSON.parse(readFileSync(file, 'utf8')) as { entries: Record<string, unknown> };
  assert.equal(Object.keys(cache.entries).length, 4);
  assert.deepEqual(warnings, []);
});

test('FROST_GEMM_PROBE=refresh measures again and replaces the cached entry', () => {
  const file = join(dir, 'cache-c', 'gemm-probe.json');
  const runners = [fakeRunner('blas', []), fakeRunner('mlas', [])];
  const counter = { calls: 0 };
  const opts = { cacheFile: file, warn: () => {}, loadPerCore: () => 0.2 };
  const first = chooseRunners(2, runners, fakeTimer(counter), { ...opts, loadPerCore: () => 3.5 });
  assert.equal(first.loadPerCore, 3.5, 'the load at the probe is recorded');
  assert.equal(chooseRunners(2, runners, fakeTimer(counter), opts).source, 'cache', 'kept, even probed under load');
  const saved = process.env.FROST_GEMM_PROBE;
  process.env.FROST_GEMM_PROBE = 'refresh';
  try {
    const again = chooseRunners(2, runners, fakeTimer(counter), opts);
    assert.equal(again.source, 'probe');
    assert.equal(again.loadPerCore, 0.2);
  } finally {
    if (saved == null) delete process.env.FROST_GEMM_PROBE;
    else process.env.FROST_GEMM_PROBE = saved;
  }
  const after = chooseRunners(2, runners, fakeTimer(counter), opts);
  assert.equal(after.source, 'cache');
  assert.equal(after.loadPerCore, 0.2, 'the refreshed entry replaced the old one');
});

test('a damaged cache file is ignored with a warning and replaced', () => {
  const file = join(dir, 'cache-b', 'gemm-probe.json');
  const runners = [fakeRunner('blas', []), fakeRunner('mlas', [])];
  const counter = { calls: 0 };
  chooseRunners(2, runners, fakeTimer(counter), { cacheFile: file, warn: () => {}, loadPerCore: () => 0.2 });
  for (const damage of [
    '{"entries": {"x": ',
    '{"version": 1, "entries": {"k": {"classes": [{"class": 3}]}}}',
    'null',
  ]) {
    writeFileSync(file, damage);
    const warnings: string[] = [];
    const r = chooseRunners(2, runners, fakeTimer(counter), {
      cacheFile: file,
      warn: (l) => warnings.push(l),
      loadPerCore: () => 0.2,
    });
    assert.equal(r.source, 'probe', damage);
    assert.equal(warnings.length, 1, damage);
    assert.match(warnings[0], /ignoring the GEMM probe cache .*gemm-probe\.json/);
    // Rewritten whole: the next process reads it without a warning.
    const next = chooseRunners(2, runners, fakeTimer(counter), {
      cacheFile: file,
      warn: (l) => warnings.push(l),
      loadPerCore: () => 0.2,
    });
    assert.equal(next.source, 'cache');
    assert.equal(warnings.length, 1);
  }
});

test('initBackend probes by default, under FROST_CACHE, and the dispatcher runs training products', async () => {
  const saved = process.env.FROST_CACHE;
  process.env.FROST_CACHE = join(dir, 'frost-cache');
  try {
    const info = await initBackend({ prefer: 'wasm', quiet: true, nativeGemm: 'auto' });
    const native = nativeGemm();
    assert.equal(native?.provider, 'probe');
    assert.equal(info.gemmChoice?.classes.length, 24);
    assert.match(info.gemm ?? '', /^per shape class, probed/);
    const cache = JSON.parse(readFileSync(join(dir, 'frost-cache', 'gemm-probe.json'), 'utf8')) as {
      entries: Record<string, unknown>;
    };
    assert.equal(Object.keys(cache.entries).length, 1);
    const y = tf.tidy(() => tf.matMul(tf.ones([64, 512]), tf.ones([512, 1536])));
    assert.deepEqual([...new Set(y.dataSync())], [512]);
    y.dispose();
  } finally {
    if (saved == null) delete process.env.FROST_CACHE;
    else process.env.FROST_CACHE = saved;
    await initBackend({ prefer: 'wasm', quiet: true, nativeGemm: false });
  }
});
