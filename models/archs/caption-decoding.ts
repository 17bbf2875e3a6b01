import * as tf from '@tensorflow/tfjs-core';
import { z } from 'zod';
import type { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import { SeededRandom } from '../../core/random.ts';
import { buildHead } from '../heads/index.ts';
import type { OutputHead } from '../heads/types.ts';
import { convEncoderSettings, type ImageEncoder, type ImageFeatures } from '../layers/image-encoder.ts';
import { maskedCrossEntropySum, type TokenLossOptions } from '../loss.ts';
import { tensorValue } from '../onnx-values.ts';
import { packTargets, permuteRows, type PackedTargets } from '../packed-steps.ts';
import type { ParamStore } from '../params.ts';
import { emitStepLogProbs } from './graph-spec.ts';
import type { ImageBatch } from './types.ts';

/** The zod fields of {@link CaptionLstmConfig}, for an architecture's strict `settings`. */
export const captionLstmSettings = {
  ...convEncoderSettings,
  /** Word embedding size e. */
  embedding: z.number().int().positive(),
  /** LSTM size H. */
  hidden: z.number().int().positive(),
  /** Dropout rate while training. */
  dropout: z.number().min(0).lt(1),
};

/** The settings every caption LSTM has; an architecture's config adds its own and says where its dropout goes. */
export type CaptionLstmConfig = z.infer<z.ZodObject<typeof captionLstmSettings>>;

/**
 * A caption batch packed by step (models/packed-steps.ts), with each sorted caption's image row.
 * Captions are batched by image, not by length, so much of a padded caption batch is padding.
 */
export interface PackedCaptions extends PackedTargets {
  imageRows: Int32Array;
}

export function packCaptions(batch: ImageBatch): PackedCaptions {
  const packed = packTargets(batch);
  return { ...packed, imageRows: permuteRows(batch.imageRows, packed.steps.order, 1) };
}

/**
 * What show-tell and show-attend-tell share besides their common settings: the caption word
 * embedding and the output head built on it, seeded dropout, the image side of a training batch,
 * and the teacher-forced loss over time-major features. Each architecture file keeps only its own
 * equations.
 */
export class CaptionDecoding {
  readonly embedding: tf.Variable;
  readonly head: OutputHead;
  private readonly dropoutRng: SeededRandom;

  constructor(
    params: ParamStore,
    seed: number,
    sizes: { vocab: number; embedding: number; output: number },
    headSpec: { name: string; options?: Record<string, unknown> },
    private readonly rate: number,
  ) {
    this.dropoutRng = new SeededRandom(seed, 'dropout');
    this.embedding = params.variable('decoder/embedding', [sizes.vocab, sizes.embedding], {
      kind: 'uniform',
      limit: 0.1,
    });
    // The head scores f and, for `tied` and the shared heads, reuses the caption word embedding.
    this.head = buildHead(
      headSpec.name,
      { vocabSize: sizes.vocab, inputDim: sizes.output, embedding: this.embedding, params, seed, dropout: rate },
      headSpec.options,
    );
  }

  dropout<T extends tf.Tensor>(x: T, training: boolean): T {
    // Seeded per call from the model's own stream, so a run is reproducible from its seed.
    return training && this.rate > 0 ? (tf.dropout(x, this.rate, undefined, this.dropoutRng.nextUint32()) as T) : x;
  }

  /** The batch's images through the encoder, one row per (sorted) caption: captions of one image share its features. */
  imageFeatures(encoder: ImageEncoder, batch: ImageBatch, packed: PackedCaptions, training: boolean): ImageFeatures {
    const images = tf.tensor(batch.images, [batch.imageCount, ...batch.imageShape], 'float32');
    const features = encoder.encode(images, training);
    const rows = tf.tensor1d(packed.imageRows, 'int32');
    return {
      grid: tf.gather(features.grid, rows) as tf.Tensor3D,
      pooled: tf.gather(features.pooled, rows) as tf.Tensor2D,
    };
  }

  /** Embedded caption inputs at the packed positions [Σ counts, e]. */
  embedInputs(packed: PackedCaptions, training: boolean): tf.Tensor2D {
    return this.dropout(tf.gather(this.embedding, tf.tensor1d(packed.inputs, 'int32')) as tf.Tensor2D, training);
  }

  /** Σ token NLL of the head's scores for features f [Σ counts, d] at the packed positions. */
  nllSum(f: tf.Tensor2D, packed: PackedCaptions, training: boolean, loss?: TokenLossOptions): tf.Scalar {
    const logits = this.head.logits(this.dropout(f, training), training);
    return maskedCrossEntropySum(
      logits,
      tf.tensor1d(packed.targets, 'int32'),
      tf.tensor1d(packed.mask, 'float32'),
      loss,
    );
  }

  /** Log-probabilities [N, |V|] for features f [N, d] at inference. */
  logProbs(f: tf.Tensor2D): tf.Tensor2D {
    return tf.logSoftmax(this.head.logits(f, false), 1);
  }

  /**
   * The decoder graph's word lookup and the embedding initializer the head may share: heads that
   * rescale E's rows store it once for both (OutputHead.sharedEmbeddingOnnx).
   */
  embedOnnx(g: GraphBuilder, prev: string): { e: string; embedding: string } {
    const shared = this.head.sharedEmbeddingOnnx?.(g);
    const embedding = shared?.matrix ?? g.initializer('decoder/embedding', tensorValue(this.embedding));
    return { e: shared ? shared.lookup(prev) : g.op('Gather', [embedding, prev]), embedding };
  }

  /** log_probs = log_softmax(head(f)) and its top-k as the decoder graph's outputs. */
  logProbsOnnx(g: GraphBuilder, f: string, embedding: string, storeFrozen: boolean): void {
    const logits = g.scope('head', () => this.head.toOnnx(g, f, { embedding, storeFrozen }));
    emitStepLogProbs(g, logits, this.embedding.shape[0]);
  }
}
