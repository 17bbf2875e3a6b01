import * as tf from '@tensorflow/tfjs-core';
import { holdForBackprop } from './backprop-hold.ts';

/**
 * x_t · W for the steps of a recurrence that all multiply by the same W, with W's gradient made once,
 * after backprop has been through every step: dW = [x_0; …; x_n]ᵀ · [dy_0; …; dy_n], one GEMM with
 * K = n·B. Plain autodiff makes dW_t = x_tᵀ · dy_t at every step (a GEMM with K = B = 64, the
 * least efficient shape) and adds each into the running [in, out] sum: for the decoder's two
 * [512, 1536] weights that was 2·T GEMMs and 2·T Adds of 786k floats per training step.
 *
 * How, within tfjs's tape: backprop visits the recorded ops in reverse order, so the op of the
 * first step, recorded before every other, has its gradient taken after all of theirs. Only that
 * op takes W as an input; each later step's op takes x_t alone (W saved for dx = dy · Wᵀ) and
 * hands (x_t, dy_t) over in its gradient function; the first step's gradient function adds its own
 * pair and returns dW for all of them. So the first step's output must reach the loss, as it does
 * in any recurrence (every later step depends on it). The pairs are the tape's own tensors, held
 * until backprop ends (backprop-hold.ts: frost's walk frees other nodes' as it goes), so nothing
 * is copied.
 * Forward values are exactly tf.matMul(x, W). Works on any backend; W may be a variable or any
 * tensor on the tape (a slice of one). Without a gradient tape it is just the matmul.
 */
export type StepMatMul = (x: tf.Tensor2D) => tf.Tensor2D;

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

export function sharedWeightMatMul(weight: tf.Tensor): StepMatMul {
  const W = weight as tf.Tensor2D;
  const xs: tf.Tensor[] = [];
  const dys: tf.Tensor[] = [];
  // Later steps: x alone on the tape. W is saved, not closed over: the caller's tidy() may dispose
  // it before backprop runs.
  const stepOp = tf.customGrad(((x: tf.Tensor, save: tf.GradSaveFunc) => {
    save([x, W]);
    return {
      value: tf.matMul(x as tf.Tensor2D, W),
      gradFunc: (dy: tf.Tensor, [xSaved, wSaved]: tf.Tensor[]) => {
        holdForBackprop(xSaved, dy);
        xs.push(xSaved);
        dys.push(dy);
        return tf.matMul(dy as tf.Tensor2D, wSaved as tf.Tensor2D, false, true);
      },
    };
  }) as unknown as CustomGradFn);
  // The first step: x and W on the tape; its gradient, taken last, returns dW for every step.
  const firstOp = tf.customGrad(((x: tf.Tensor, w: tf.Tensor, save: tf.GradSaveFunc) => {
    save([x, w]);
    return {
      value: tf.matMul(x as tf.Tensor2D, w as tf.Tensor2D),
      gradFunc: (dy: tf.Tensor, [xSaved, wSaved]: tf.Tensor[]) => {
        xs.push(xSaved);
        dys.push(dy);
        const X = xs.length === 1 ? xs[0] : tf.concat(xs, 0);
        const DY = dys.length === 1 ? dys[0] : tf.concat(dys, 0);
        const dW = tf.matMul(X, DY, true, false);
        xs.length = 0;
        dys.length = 0;
        return [tf.matMul(dy as tf.Tensor2D, wSaved as tf.Tensor2D, false, true), dW];
      },
    };
  }) as unknown as CustomGradFn);
  let first = true;
  return (x) => {
    if (!first) return stepOp(x) as tf.Tensor2D;
    first = false;
    return firstOp(x, W) as tf.Tensor2D;
  };
}
