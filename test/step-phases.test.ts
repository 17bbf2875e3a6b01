/**
 * bench:train's step phases: the aggregation of phase times and kernel records into the report's rows
 * (bench/step-phase-report.ts), and the recorder (bench/step-phases.ts, bench/kernel-timers.ts) charging an Adam
 * step's kernels to the phase they ran in, from outside the training code, and leaving the engine as it found it.
 */
import '@tensorflow/tfjs';
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import * as tf from '@tensorflow/tfjs-core';
import { timeKernels, type KernelCall } from '../bench/kernel-timers.ts';
import {
  mergeStepPhases,
  phaseRows,
  stepPhaseLines,
  topNonGemmOps,
  zeroPhaseMs,
  type StepPhases,
} from '../bench/step-phase-report.ts';
import { StepPhaseRecorder } from '../bench/step-phases.ts';
import { initBackend } from '../train/backend/select.ts';
import { ADAM_KERNEL } from '../train/optim/adam.ts';
import { Adam } from '../train/optim/adam.ts';

/** Two measured steps of 100 ms and two profiled steps: round numbers whose shares are easy to check. */
const profile = (): StepPhases => ({
  measured: { steps: 2, ms: { data: 10, forward: 60, backward: 100, optimizer: 20, other: 10 } },
  profiled: {
    steps: 2,
    ms: { data: 10, forward: 80, backward: 120, optimizer: 30, other: 0 },
    kernels: [
      { phase: 'forward', kernel: 'BatchMatMul', ms: 40, calls: 4 },
      { phase: 'forward', kernel: 'Add', ms: 10, calls: 6 },
      { phase: 'backward', kernel: 'BatchMatMul', ms: 60, calls: 8 },
      { phase: 'backward', kernel: '_FusedMatMul', ms: 20, calls: 2 },
      { phase: 'backward', kernel: 'Add', ms: 16, calls: 10 },
      { phase: 'backward', kernel: 'Transpose', ms: 14, calls: 4 },
      { phase: 'optimizer', kernel: 'FrostAdam', ms: 24, calls: 12 },
      // One Sum called by a fused kernel through the registry, one run by the engine.
      { phase: 'forward', kernel: 'Sum', parent: 'FrostSoftmaxXent', ms: 8, calls: 2 },
      { phase: 'backward', kernel: 'Sum', ms: 4, calls: 6 },
    ],
    nativeGemmMs: { data: 0, forward: 30, backward: 70, optimizer: 0, other: 0 },
    sameBatchesMeasuredMs: 200,
  },
});

describe('step phase report', () => {
  test('phase rows: measured times and shares, the profiled GEMM share and what is outside kernels, per step', () => {
    const rows = phaseRows(profile());
    const by = Object.fromEntries(rows.map((r) => [r.phase, r]));
    assert.deepEqual(
      rows.map((r) => r.phase),
      ['data', 'forward', 'backward', 'optimizer', 'other', 'step'],
    );
    assert.equal(by.step.ms, 100);
    assert.equal(by.backward.ms, 50);
    assert.equal(by.backward.share, 0.5);
    // Backward, profiled: 60 ms a step, of it 40 in BatchMatMul and _FusedMatMul, 17 in Add, Transpose and Sum.
    assert.equal(by.backward.profiledMs, 60);
    assert.equal(by.backward.gemmMs, 40);
    assert.ok(Math.abs(by.backward.gemmShare! - 2 / 3) < 1e-12);
    assert.equal(by.backward.nativeGemmMs, 35);
    assert.equal(by.backward.otherKernelsMs, 17);
    assert.equal(by.backward.outsideKernelsMs, 3);
    assert.equal(by.backward.calls, 15);
    assert.equal(by.optimizer.gemmMs, 0);
    assert.equal(by.optimizer.otherKernelsMs, 12);
    assert.equal(by.data.outsideKernelsMs, 5);
    // The whole step: 120 ms profiled, 60 of it GEMM, 38 other kernels.
    assert.equal(by.step.profiledMs, 120);
    assert.equal(by.step.gemmMs, 60);
    assert.equal(by.step.gemmShare, 0.5);
    assert.equal(by.step.otherKernelsMs, 38);
    assert.equal(by.step.outsideKernelsMs, 120 - 60 - 38);
  });

  test('without profiled steps the rows carry the measured phases only', () => {
    const rows = phaseRows({ measured: profile().measured });
    assert.equal(rows.find((r) => r.phase === 'forward')!.share, 0.3);
    assert.ok(rows.every((r) => r.gemmMs === undefined && r.profiledMs === undefined));
  });

  test('top non-GEMM kernels: GEMM kernels left out, phases added up, a row per caller, most time first', () => {
    const ops = topNonGemmOps(profile().profiled!, 5);
    assert.deepEqual(
      ops.map((o) => [o.kernel, o.parent]),
      [
        ['Add', undefined],
        ['FrostAdam', undefined],
        ['Transpose', undefined],
        ['Sum', 'FrostSoftmaxXent'],
        ['Sum', undefined],
      ],
    );
    assert.equal(topNonGemmOps(profile().profiled!, 2).length, 2);
    const add = ops[0];
    assert.equal(add.ms, 13);
    assert.equal(add.calls, 8);
    assert.equal(add.byPhase.forward, 5);
    assert.equal(add.byPhase.backward, 8);
    assert.ok(Math.abs(add.share - 13 / 120) < 1e-12);
  });

  test("rounds merge: steps, times and each phase's kernel records added", () => {
    const merged = mergeStepPhases([profile(), profile(), { measured: profile().measured }])!;
    assert.equal(merged.measured.steps, 6);
    assert.equal(merged.measured.ms.backward, 300);
    assert.equal(merged.profiled!.steps, 4);
    assert.equal(merged.profiled!.sameBatchesMeasuredMs, 400);
    assert.equal(merged.profiled!.kernels.length, 9);
    const adds = merged.profiled!.kernels.find((k) => k.phase === 'backward' && k.kernel === 'Add')!;
    assert.deepEqual([adds.ms, adds.calls], [32, 20]);
    // Per step, merging changes nothing.
    assert.deepEqual(phaseRows(merged), phaseRows(profile()));
    assert.equal(mergeStepPhases([]), undefined);
  });

  test('the Markdown: a row per phase and the step, then the top kernels', () => {
    const md = stepPhaseLines('learned, probe 2T', profile()).join('\n');
    assert.match(md, /^### learned, probe 2T/);
    assert.match(md, /\| backward \| 50\.0 \| 50% \| 60\.0 \| 40\.0 \| 67% \| 35\.0 \| 17\.0 \| 3\.0 \| 15 \|/);
    assert.match(md, /\| \*\*step\*\* \| 100 \| 100% \| 120 \| 60\.0 \| 50% \|/);
    assert.match(md, /\| Add \| 13\.0 \| 11% \| 8 \| 1625 \| 5\.0 \/ 8\.0 \/ 0\.0 \|/);
    assert.match(md, /\| Sum \(in FrostSoftmaxXent\) \| 4\.0 \| 3% \| 1 \|/);
  });
});

describe('step phase recorder (wasm)', () => {
  before(async () => {
    await initBackend({ prefer: 'wasm', quiet: true });
  });

  test('nested kernels: self times add up to the outer call, depth says which ran inside', () => {
    const calls: KernelCall[] = [];
    const name = 'TestOuterSquare';
    tf.registerKernel({
      kernelName: name,
      backendName: tf.getBackend(),
      // A kernel that runs another through the registry, as softmax-xent.ts and the Conv2D gradients do.
      kernelFunc: ({ inputs, backend }) =>
        tf.getKernel('Square', tf.getBackend())!.kernelFunc({ inputs, backend, attrs: {} }) as tf.TensorInfo,
    });
    const timers = timeKernels((c) => calls.push(c));
    try {
      tf.tidy(() => tf.engine().runKernel(name, { x: tf.ones([64, 64]) }, {}));
    } finally {
      timers.restore();
      tf.unregisterKernel(name, tf.getBackend());
    }
    const outer = calls.find((c) => c.kernelName === name)!;
    const inner = calls.find((c) => c.kernelName === 'Square')!;
    assert.deepEqual([outer.depth, inner.depth], [0, 1]);
    assert.deepEqual([outer.parent, inner.parent], [undefined, name]);
    assert.equal(inner.selfMs, inner.ms);
    assert.ok(Math.abs(outer.selfMs + inner.ms - outer.ms) < 1e-9);
    assert.equal(timers.depth, 0);
  });

  test("an Adam step's kernels land in their phases; the engine and the kernels are as before afterwards", () => {
    const w = tf.variable(tf.randomNormal([32, 16], 0, 0.1, 'float32', 1));
    const adam = new Adam(new Map([['w', w]]));
    const matMul = tf.getKernel('BatchMatMul', tf.getBackend())!.kernelFunc;
    const engine = tf.engine() as unknown as Record<string, unknown>;
    const recorder = new StepPhaseRecorder({ kernels: true });
    const loss = recorder.step(
      () =>
        adam.minimize(() => {
          // The batch, made from JS values inside the loss as the models do: the data phase.
          const x = tf.tensor2d(new Float32Array(8 * 32).fill(0.5), [8, 32]);
          return tf.sum(tf.square(tf.matMul(x, w)));
        }).loss,
    );
    const { steps, ms, kernels } = recorder.totals();
    assert.ok(Number.isFinite(loss));
    assert.equal(steps, 1);
    for (const phase of ['data', 'forward', 'backward', 'optimizer'] as const)
      assert.ok(ms[phase] > 0, `no time in ${phase}`);
    const phasesOf = (kernel: string) => kernels.filter((k) => k.kernel === kernel).map((k) => k.phase);
    // x·w forward; dw = xᵀ·dy backward (dx is not needed: x is no variable, but tfjs computes it).
    assert.deepEqual(new Set(phasesOf('BatchMatMul')), new Set(['forward', 'backward']));
    assert.deepEqual(phasesOf(ADAM_KERNEL), ['optimizer']);
    assert.ok(!kernels.some((k) => k.phase === 'data'), 'a kernel charged to data');
    assert.equal(tf.getKernel('BatchMatMul', tf.getBackend())!.kernelFunc, matMul);
    for (const hooked of ['gradients', 'tidy', 'makeTensor'])
      assert.ok(!Object.hasOwn(engine, hooked), `engine.${hooked} still hooked`);
    // The untimed recorder records phases and no kernels.
    const plain = new StepPhaseRecorder();
    plain.step(() => adam.minimize(() => tf.sum(tf.square(w))));
    assert.deepEqual(plain.totals().kernels, []);
    assert.deepEqual(Object.keys(plain.totals().ms), Object.keys(zeroPhaseMs()));
    adam.dispose();
    w.dispose();
  });
});
