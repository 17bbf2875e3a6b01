import * as tf from '@tensorflow/tfjs-core';

/**
 * x_t · W for the steps of a recurrence that all multiply by the same W, with W's gradient made once,
 * after backprop has been through every step: dW = [x_0; …; x_n]ᵀ · [dy_0; …; dy_n], one GEMM with
 * K = n·B. Plain autograd makes dW_t = x_tᵀ · dy_t at every step (a GEMM with K = B = 64, the
 * least efficient shape) and adds each into the running [in, out] sum: for the decoder's two
 * [512, 1536] weights that was 2·T GEMMs and 2·T Adds of 786k floats per training step.
 *
 * How, within tfjs's tape: an anchor op takes W and returns a scalar 0 that every step's op takes
 * as an input (and whose gradient is 0). The step ops are recorded after the anchor, so backprop
 * (reverse tape order) reaches the anchor only after every step; each step's gradient function
 * returns dx = dy · Wᵀ and hands (x_t, dy_t) to the anchor, whose gradient function returns dW.
 * Forward values are exactly tf.matMul(x, W). Works on any backend; W may be a variable or any
 * tensor on the tape (a slice of one). Without a gradient tape it is just the matmul.
 */
export type StepMatMul = (x: tf.Tensor2D) => tf.Tensor2D;

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

export function sharedWeightMatMul(weight: tf.Tensor): StepMatMul {
  const W = weight as tf.Tensor2D;
  const xs: tf.Tensor[] = [];
  const dys: tf.Tensor[] = [];
  const release = () => {
    tf.dispose([...xs, ...dys]);
    xs.length = 0;
    dys.length = 0;
  };
  const anchorOp = tf.customGrad(((w: tf.Tensor, save: tf.GradSaveFunc) => {
    save([w]);
    return {
      value: tf.scalar(0),
      gradFunc: (_dy: tf.Tensor, [ws]: tf.Tensor[]) => {
        if (xs.length === 0) return tf.zerosLike(ws);
        const X = xs.length === 1 ? xs[0] : tf.concat(xs, 0);
        const DY = dys.length === 1 ? dys[0] : tf.concat(dys, 0);
        const dW = tf.matMul(X, DY, true, false);
        release();
        return dW;
      },
    };
  }) as unknown as CustomGradFn);
  const anchor = anchorOp(W) as tf.Scalar;
  const stepOp = tf.customGrad(((x: tf.Tensor, a: tf.Tensor, save: tf.GradSaveFunc) => {
    // W is saved, not closed over: the caller's tidy() may dispose it before backprop runs.
    save([x, W]);
    return {
      value: tf.matMul(x as tf.Tensor2D, W),
      gradFunc: (dy: tf.Tensor, [xSaved, wSaved]: tf.Tensor[]) => {
        xs.push(tf.keep(xSaved.clone()));
        dys.push(tf.keep(dy.clone()));
        return [tf.matMul(dy as tf.Tensor2D, wSaved as tf.Tensor2D, false, true), tf.zerosLike(a)];
      },
    };
  }) as unknown as CustomGradFn);
  return (x) => stepOp(x, anchor) as tf.Tensor2D;
}
