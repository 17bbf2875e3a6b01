import * as tf from '@tensorflow/tfjs-core';
import { z } from 'zod';
import { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { SeededRandom } from '../../core/random.ts';
import { buildHead } from '../heads/index.ts';
import type { OutputHead } from '../heads/types.ts';
import { seededDropout } from '../layers/dropout.ts';
import {
  createLstm,
  lstmInputProjection,
  lstmOnnxStep,
  lstmStep,
  lstmStepWith,
  type LstmWeights,
} from '../layers/lstm.ts';
import { sharedWeightMatMul } from '../layers/shared-matmul.ts';
import { maskedCrossEntropySum } from '../loss.ts';
import { tensorValue } from '../onnx-values.ts';
import { ParamStore } from '../params.ts';
import type { LanguageModel, LmState, StreamWindow } from './lm-types.ts';
import { registerLmArch } from './registry.ts';

const rate = z.number().min(0).lt(1);
const settings = z.strictObject({
  /** Word embedding size e. */
  embedding: z.number().int().positive(),
  /** LSTM size H of every layer; also d, the size of f that the head scores. */
  hidden: z.number().int().positive(),
  layers: z.number().int().positive().max(8),
  /** Locked dropout on the embeddings. */
  dropoutEmbedding: rate,
  /** Locked dropout between LSTM layers. */
  dropoutHidden: rate,
  /** Locked dropout on f, the head's input (and the drill head's hidden layers unless it sets its own). */
  dropout: rate,
});

/**
 * A multi-layer LSTM language model (Zaremba et al., 2014; Merity et al.'s AWD-LSTM regularisers):
 *   x_t = E w_t                                   (embedding dropout: locked, one mask per window)
 *   h_t^(l) = LSTM_l(h_t^(l-1), h_{t-1}^(l))       (locked dropout between layers)
 *   f_t = h_t^(L)                                 (locked output dropout) → the head scores f_t
 * "Locked" (variational, Gal & Ghahramani) dropout draws one mask per stream and window and applies
 * it at every step, so the recurrence sees the same units dropped throughout a window.
 * Weight tying (Inan et al.; Press & Wolf) is the `tied` head; the shared-* and drill heads also
 * read E, and a projection H → e is learned when H ≠ e (heads/projection.ts).
 */
export type LstmLmConfig = z.infer<typeof settings>;

const presets: Record<string, LstmLmConfig> = {
  tiny: { embedding: 32, hidden: 64, layers: 1, dropoutEmbedding: 0, dropoutHidden: 0, dropout: 0 },
  // Zaremba et al.'s medium model at half width: fits a 30-minute run on two cores.
  small: { embedding: 256, hidden: 256, layers: 2, dropoutEmbedding: 0.1, dropoutHidden: 0.25, dropout: 0.4 },
  // Zaremba et al.'s medium model (PTB 82.7 test perplexity).
  paper: { embedding: 650, hidden: 650, layers: 2, dropoutEmbedding: 0.1, dropoutHidden: 0.5, dropout: 0.5 },
};

class LstmLm implements LanguageModel {
  readonly arch = 'lstm-lm';
  readonly params: ParamStore;
  readonly head: OutputHead;
  readonly stateNames: string[];
  readonly stateSize: number;
  private readonly embedding: tf.Variable;
  private readonly lstms: LstmWeights[];
  private readonly dropoutRng: SeededRandom;

  constructor(
    private readonly cfg: LstmLmConfig,
    private readonly vocabSize: number,
    headSpec: { name: string; options?: Record<string, unknown> },
    seed: number,
  ) {
    const p = new ParamStore(seed);
    this.params = p;
    this.stateSize = cfg.hidden;
    this.dropoutRng = new SeededRandom(seed, 'dropout');
    this.embedding = p.variable('decoder/embedding', [vocabSize, cfg.embedding], { kind: 'uniform', limit: 0.1 });
    this.lstms = Array.from({ length: cfg.layers }, (_, l) =>
      createLstm(p, `decoder/lstm${l}`, l === 0 ? cfg.embedding : cfg.hidden, cfg.hidden),
    );
    this.stateNames = this.lstms.flatMap((_, l) => [`h${l}`, `c${l}`]);
    this.head = buildHead(
      headSpec.name,
      { vocabSize, inputDim: cfg.hidden, embedding: this.embedding, params: p, seed, dropout: cfg.dropout },
      headSpec.options,
    );
  }

  initialState(rows: number): LmState {
    return Object.fromEntries(this.stateNames.map((n) => [n, tf.zeros([rows, this.cfg.hidden]) as tf.Tensor2D]));
  }

  /** One mask [B, size] for the window, or null when not training or the rate is 0. */
  private lockedMask(B: number, size: number, p: number, training: boolean): tf.Tensor2D | null {
    if (!training || p === 0) return null;
    return seededDropout(tf.ones([B, size]) as tf.Tensor2D, p, this.dropoutRng.nextUint32());
  }

  /** f [T·B, H] time-major for a window, and the state after its last step. */
  private forward(window: StreamWindow, state: LmState, training: boolean): { f: tf.Tensor2D; state: LmState } {
    const { B, T } = window;
    const idsTM = new Int32Array(B * T);
    for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) idsTM[t * B + b] = window.inputs[b * T + t];
    let x = tf.gather(this.embedding, tf.tensor1d(idsTM, 'int32')) as tf.Tensor2D;
    const applyLocked = (v: tf.Tensor2D, p: number): tf.Tensor2D => {
      const mask = this.lockedMask(B, v.shape[1], p, training);
      if (!mask) return v;
      return tf.reshape(tf.mul(tf.reshape(v, [T, B, v.shape[1]]), mask), v.shape);
    };
    x = applyLocked(x, this.cfg.dropoutEmbedding);
    const next: LmState = {};
    for (const [l, w] of this.lstms.entries()) {
      if (l > 0) x = applyLocked(x, this.cfg.dropoutHidden);
      const gx = tf.split(lstmInputProjection(w, x), T, 0) as tf.Tensor2D[];
      const hWh = sharedWeightMatMul(w.Wh);
      let s = { h: state[`h${l}`], c: state[`c${l}`] };
      const outputs: tf.Tensor2D[] = [];
      for (let t = 0; t < T; t++) {
        s = lstmStepWith(w, gx[t], s, hWh);
        outputs.push(s.h);
      }
      next[`h${l}`] = s.h;
      next[`c${l}`] = s.c;
      x = T === 1 ? outputs[0] : tf.concat(outputs, 0);
    }
    return { f: applyLocked(x, this.cfg.dropout), state: next };
  }

  private targetsTimeMajor(window: StreamWindow): Int32Array {
    const { B, T } = window;
    const out = new Int32Array(B * T);
    for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) out[t * B + b] = window.targets[b * T + t];
    return out;
  }

  windowLoss(window: StreamWindow, state: LmState, training: boolean): { lossSum: tf.Scalar; state: LmState } {
    let kept: LmState = {};
    const lossSum = tf.tidy(() => {
      const out = this.forward(window, state, training);
      kept = out.state;
      for (const t of Object.values(kept)) tf.keep(t);
      const logits = this.head.logits(out.f, training);
      const n = window.B * window.T;
      return maskedCrossEntropySum(
        logits,
        tf.tensor1d(this.targetsTimeMajor(window), 'int32'),
        tf.ones([n]) as tf.Tensor1D,
      );
    });
    return { lossSum, state: kept };
  }

  targetLogProbs(window: StreamWindow, state: LmState): { logProbs: Float32Array; state: LmState } {
    const { B, T } = window;
    let kept: LmState = {};
    const picked = tf.tidy(() => {
      const out = this.forward(window, state, false);
      kept = out.state;
      for (const t of Object.values(kept)) tf.keep(t);
      const logProbs = tf.logSoftmax(this.head.logits(out.f, false), 1);
      const targets = this.targetsTimeMajor(window);
      const flat = targets.map((y, i) => i * this.vocabSize + y);
      return tf.gather(tf.reshape(logProbs, [-1]), tf.tensor1d(flat, 'int32'));
    });
    const tm = picked.dataSync() as Float32Array;
    picked.dispose();
    const logProbs = new Float32Array(B * T);
    for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) logProbs[b * T + t] = tm[t * B + b];
    return { logProbs, state: kept };
  }

  step(tokens: tf.Tensor1D, state: LmState): { logProbs: tf.Tensor2D; state: LmState } {
    return tf.tidy(() => {
      let x = tf.gather(this.embedding, tokens) as tf.Tensor2D;
      const next: LmState = {};
      for (const [l, w] of this.lstms.entries()) {
        const s = lstmStep(w, lstmInputProjection(w, x), { h: state[`h${l}`], c: state[`c${l}`] });
        next[`h${l}`] = s.h;
        next[`c${l}`] = s.c;
        x = s.h;
      }
      return { logProbs: tf.logSoftmax(this.head.logits(x, false), 1) as tf.Tensor2D, state: next };
    });
  }

  toOnnx(opts: { opset?: number; storeFrozen?: boolean } = {}): GraphBuilder {
    const g = new GraphBuilder('frost-lstm-lm-step', { opset: opts.opset ?? 18 });
    const H = this.cfg.hidden;
    const token = g.input('token', 'int64', ['rows']);
    const inputs = Object.fromEntries(this.stateNames.map((n) => [n, g.input(n, 'float32', ['rows', H])]));
    // Heads that rescale E's rows store it once for the lookup and the output (OutputHead.sharedEmbeddingOnnx).
    const shared = this.head.sharedEmbeddingOnnx?.(g);
    const embedding = shared?.matrix ?? g.initializer('decoder/embedding', tensorValue(this.embedding));
    let x = shared ? shared.lookup(token) : g.op('Gather', [embedding, token]);
    const outputs: [string, string][] = [];
    for (const [l, w] of this.lstms.entries()) {
      const next = lstmOnnxStep(g, w, `decoder/lstm${l}`, x, { h: inputs[`h${l}`], c: inputs[`c${l}`] });
      outputs.push([next.h, `next_h${l}`], [next.c, `next_c${l}`]);
      x = next.h;
    }
    const logits = g.scope('head', () => this.head.toOnnx(g, x, { embedding, storeFrozen: opts.storeFrozen ?? false }));
    g.output(g.op('LogSoftmax', [logits], { axis: 1 }), 'log_probs', 'float32', ['rows', this.vocabSize]);
    for (const [value, name] of outputs) g.output(value, name, 'float32', ['rows', H]);
    return g;
  }
}

registerLmArch<LstmLmConfig>({
  name: 'lstm-lm',
  tasks: ['lm'],
  summary: 'multi-layer LSTM language model with locked dropout (Zaremba et al.; AWD-LSTM regularisers)',
  presets,
  settings,
  build: (config, vocabSize, head, seed) => new LstmLm(config, vocabSize, head, seed),
});
