/**
 * tf.variableGrads with the backward pass's memory released as it goes.
 *
 * tfjs-core walks the tape backward keeping every gradient it has computed and every tensor the forward pass saved
 * until the whole walk ends (tape.ts backpropagateGradients; engine.gradients disposes the saved tensors only after
 * it). So a training step's peak holds all the activations and, at once, the gradient of every one of them: for the
 * Transformer `small` on 4,096-token batches 2.2 GB of tensor data, three [N, |V|] matrices among it, where PyTorch
 * frees each as soon as its node is done.
 *
 * The walk visits each node once, in reverse order, and a node's output gradients (its dys) and saved tensors are
 * read by that node's gradient functions only. So when the walk reaches the next node, the previous one's dys and
 * saved tensors are released, except a tensor one of its gradient functions returned as an input's gradient (a
 * pass-through returns its dy itself), which the walk still holds, and one a gradient function handed on to a later
 * node (models/layers/backprop-hold.ts). The last node's are left to tfjs, as before.
 * Gradients are the same tensors computed by the same functions: only when memory is freed changes.
 *
 * Some kernels' gradients read only the shapes of what they saved: Add keeps both addends (so x·W stays alive under
 * every x·W + b), Reshape its input. Those nodes keep a shape instead, and the data goes when the forward pass is done
 * with it.
 */
import * as tf from '@tensorflow/tfjs-core';
import { isHeldForBackprop } from '../../models/layers/backprop-hold.ts';

interface TapeNode {
  kernelName: string;
  saved?: tf.Tensor[];
  gradient?: (dys: tf.Tensor[]) => Record<string, () => tf.Tensor>;
}

/** The engine's members this reaches: a tape node is added by this method while a tape records. */
interface EngineTape {
  addTapeNode: (...args: unknown[]) => void;
  state: { activeTape: TapeNode[] | null; gradientDepth: number };
}

/** What a visited node leaves behind until the walk moves on. */
interface Visited {
  dys: tf.Tensor[];
  saved: tf.Tensor[];
  /** Tensors its gradient functions returned: input gradients the walk still holds. */
  returned: Set<tf.Tensor>;
}

/**
 * Kernels whose stock gradient (tfjs-core's gradients/*_grad) reads nothing of a saved tensor but its shape (Add,
 * Sub: broadcast axes; Reshape, ExpandDims, Sum, Mean: the input's shape; Concat: the pieces' sizes; Slice: the
 * padding back to the input). test/lean-backprop.test.ts checks the gradients against tfjs's own walk.
 */
const SHAPE_ONLY_SAVES = new Set(['Add', 'Sub', 'Reshape', 'ExpandDims', 'Sum', 'Mean', 'Concat', 'Slice']);

/** A saved tensor's stand-in for a gradient that reads its shape: nothing to free. */
function shapeOf(t: tf.Tensor): tf.Tensor {
  const standIn = { shape: t.shape, rank: t.rank, dtype: t.dtype, size: t.size, dispose: () => {} };
  return standIn as unknown as tf.Tensor;
}

function release(node: Visited | null): void {
  if (node == null) return;
  for (const t of [...node.dys, ...node.saved])
    if (t != null && !node.returned.has(t) && !isHeldForBackprop(t)) t.dispose();
}

/**
 * Wraps a tape node's gradient function so that calling it first releases the node visited before it.
 * `walk.last` is shared by the nodes of one backward pass.
 */
function leanGradient(node: TapeNode, walk: { last: Visited | null }): void {
  const gradient = node.gradient;
  if (gradient == null) return;
  // In place: the engine's gradient closure holds this same array.
  const saved = node.saved;
  if (saved != null && SHAPE_ONLY_SAVES.has(node.kernelName))
    saved.forEach((t, i) => {
      saved[i] = shapeOf(t);
      t.dispose();
    });
  node.gradient = (dys) => {
    release(walk.last);
    walk.last = null;
    const inputs = gradient(dys);
    const visited: Visited = { dys: [...dys], saved: node.saved ?? [], returned: new Set() };
    walk.last = visited;
    const wrapped: Record<string, () => tf.Tensor> = {};
    for (const [name, fn] of Object.entries(inputs))
      wrapped[name] = () => {
        const dx = fn();
        visited.returned.add(dx);
        return dx;
      };
    return wrapped;
  };
}

/**
 * tf.variableGrads(f, varList) whose backward pass frees each node's gradients and saved tensors once the node is
 * done. Not for nested gradients (a gradient taken inside f): those keep tfjs's own walk.
 */
export function leanVariableGrads(
  f: () => tf.Scalar,
  varList: tf.Variable[],
): { value: tf.Scalar; grads: tf.NamedTensorMap } {
  const engine = tf.engine() as unknown as EngineTape;
  if (engine.state.gradientDepth > 0 || typeof engine.addTapeNode !== 'function') return tf.variableGrads(f, varList);
  const walk: { last: Visited | null } = { last: null };
  const addTapeNode = engine.addTapeNode;
  engine.addTapeNode = function (this: EngineTape, ...args: unknown[]) {
    addTapeNode.apply(this, args);
    const tape = this.state.activeTape;
    if (tape != null && tape.length > 0) leanGradient(tape[tape.length - 1]!, walk);
  };
  try {
    return tf.variableGrads(f, varList);
  } finally {
    engine.addTapeNode = addTapeNode;
  }
}
