import type * as tf from '@tensorflow/tfjs-core';
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { OptionsSchema } from '../../core/options.ts';
import type { ParamStore } from '../params.ts';
import type { TargetMatrixReader } from './target-matrix.ts';

/** What a head is built from. Heads that reuse the target embedding read it from here. */
export interface HeadContext {
  /** |V|, the target vocabulary size. */
  vocabSize: number;
  /** d, the size of the decoder's output vector f that the head scores. */
  inputDim: number;
  /** The decoder's input (target) embedding [|V|, e], for tied, shared-* and drill heads. */
  embedding: tf.Variable;
  /** The store the head puts its own parameters in, under 'head/...'. */
  params: ParamStore;
  /** Seed of the frozen matrices: the same seed regenerates the same matrix anywhere. */
  seed: number;
  /** Dropout rate for heads with hidden layers (drill). */
  dropout: number;
  /**
   * Target ids the output layer never predicts (pieces absent from the training targets): their logits are
   * pinned far below every other (models/heads/output-mask.ts), in training and in the exported graph.
   */
  excludedTargets?: readonly number[];
  /**
   * With `excludedTargets`: build the head on the kept targets only (a compact output layer, models/heads/
   * compact-output.ts), so the excluded ids cost no work; without, their logits are computed and then pinned.
   */
  compactOutput?: boolean;
  /**
   * Set by the compact output layer on the context it builds the head on: the vocabulary id of each of the head's
   * `vocabSize` rows, ascending. Heads that score against the embedding read only these rows of it
   * (models/heads/target-rows.ts). Absent: row j is id j.
   */
  rowIds?: Int32Array;
}

/** Names of ONNX values the head can build on. */
export interface HeadOnnxContext {
  /** The initializer holding the target embedding [|V|, e]: tied heads reference it instead of storing a copy. */
  embedding: string;
  /**
   * Store frozen matrices that the head could regenerate (from a seed or from structure) as plain
   * initializers instead (`frost export --store-frozen`): bigger files, no regeneration subgraph.
   */
  storeFrozen?: boolean;
}

/** An output layer: scores the decoder's output vectors f against one target vector per word. */
export interface OutputHead {
  readonly name: string;
  /** logits [N, |V|] for f [N, d]; `training` switches dropout on. */
  logits(f: tf.Tensor2D, training: boolean): tf.Tensor2D;
  /** Emits the head's nodes; `f` names a float32 [N, d] value; returns the logits value's name. */
  toOnnx(g: GraphBuilder, f: string, ctx: HeadOnnxContext): string;
  /**
   * Frozen parameters the exported graph regenerates instead of storing, for the model card's
   * `params.generated` (0 with `storeFrozen`). Heads without such parameters leave it out.
   */
  generatedParams?(storeFrozen: boolean): number;
  /**
   * For heads whose output matrix is the target embedding with each row rescaled: stores that
   * matrix once, as the decoder's embedding initializer, with the per-row scale beside it, so
   * the input lookup and the output projection share one |V| x e initializer. The decoder then
   * passes `matrix` as `HeadOnnxContext.embedding` and embeds tokens with `lookup`.
   */
  sharedEmbeddingOnnx?(g: GraphBuilder): { matrix: string; lookup(ids: string): string };
  /**
   * A compact output layer's shortcut for the training loss (models/loss.ts `headCrossEntropySum`): the head's own
   * logits [N, K] and the target ids [N] as columns of them. Softmax cross-entropy over these equals that over the
   * widened [N, |V|] logits (an excluded id's probability is exactly 0 there), without the widening, whose gather
   * and its gradient cost tfjs-wasm about a third of what the smaller product saves.
   */
  trainingScores?(
    f: tf.Tensor2D,
    targets: tf.Tensor1D,
    training: boolean,
  ): { logits: tf.Tensor2D; targets: tf.Tensor1D };
  /**
   * A compact output layer's: the vocabulary id of each of its rows (ascending), so a reader of its target
   * matrix maps row k back to its id. Absent when row j is id j.
   */
  readonly rowIds?: Int32Array;
  /** The head's section of the model card: its name and every setting needed to rebuild it. */
  describe(): Record<string, unknown> & { name: string };
}

/** Everything about one output head; each file in models/heads/ registers one. */
export interface HeadDefinition<Options extends object = object> {
  name: string;
  /** One line for `frost train --help`. */
  summary: string;
  /** Whether the target vectors are frozen rather than learned (the heads the paper's claim is about). */
  frozen: boolean;
  /** The head's options (`--head-option key=value`): types and defaults; unknown keys are refused. */
  options: OptionsSchema<Options>;
  /** Reads the target vectors for the report's analyses; absent when the head has no single matrix to read. */
  targetMatrix?: TargetMatrixReader;
  build(ctx: HeadContext, options: Options): OutputHead;
}
