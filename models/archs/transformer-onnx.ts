import { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { ModelCard } from '../../core/runtime/model-card.ts';
import { feedForwardOnnx } from '../layers/feed-forward.ts';
import { layerNormOnnx, type LayerNormWeights } from '../layers/layer-norm.ts';
import {
  attendHeadsOnnx,
  attendStepOnnx,
  keyPaddingBiasOnnx,
  projectHeadsOnnx,
  projectStepHeadsOnnx,
} from '../layers/multi-head-attention.ts';
import { positionVectorsOnnx } from '../layers/positional-encoding.ts';
import { tensorValue } from '../onnx-values.ts';
import type { TransformerModel } from './transformer.ts';
import type { OnnxGraphOptions } from './types.ts';
import { emitStepLogProbs, encoderDecoderOnnx } from './graph-spec.ts';

/**
 * The Transformer's two graphs. The encoder graph returns, besides the source mask, each decoder
 * layer's source keys and values (computed once per sentence) and the empty self-attention caches
 * [batch, heads, 0, d/heads]. The decoder-step graph reads the caches of the positions so far,
 * appends the current position's keys and values, and returns them as next_self_*; its position is
 * the caches' length, read from their shape, so nothing else needs feeding; besides `log_probs` it
 * returns each row's top-k (graph-spec.ts's emitStepLogProbs). Both graphs have dynamic batch
 * (rows) and length axes.
 */
export function transformerOnnx(
  model: TransformerModel,
  opts: OnnxGraphOptions,
): { encoder: GraphBuilder; decoder: GraphBuilder; graphs: ModelCard['graphs'] } {
  return encoderDecoderOnnx(model, ['src_ids', 'src_lengths'], opts, {
    encoder: (opset) => encoderGraph(model, opset),
    decoder: (opset, storeFrozen) => decoderGraph(model, opset, storeFrozen),
  });
}

/** LN(x + F(x)) or x + F(LN(x)), as TransformerModel's residual blocks (no dropout: inference). */
function residualOnnx(
  g: GraphBuilder,
  model: TransformerModel,
  x: string,
  ln: LayerNormWeights,
  f: (h: string) => string,
): string {
  if (model.cfg.norm === 'pre') return g.op('Add', [x, f(layerNormOnnx(g, ln, x))]);
  return layerNormOnnx(g, ln, g.op('Add', [x, f(x)]));
}

function encoderGraph(model: TransformerModel, opset: number): GraphBuilder {
  const g = new GraphBuilder('frost-transformer-encoder', { opset });
  const { model: d, heads } = model.cfg;
  const dk = d / heads;
  const w = model.w;
  const ids = g.input('src_ids', 'int64', ['batch', 'src_len']);
  const lengths = g.input('src_lengths', 'int64', ['batch']);
  // src_mask [B, S] = position < length
  const S = g.op('Gather', [g.op('Shape', [ids]), g.constInt64(1)]);
  const positions = g.op('Range', [g.constInt64(0), S, g.constInt64(1)]);
  const mask = g.cast(g.op('Less', [g.unsqueeze(positions, [0]), g.unsqueeze(lengths, [1])]), 'float32');
  const bias = keyPaddingBiasOnnx(g, mask);
  // x = √d · E[src] + P[0 … S−1]
  const E = g.initializer(w.joint ? 'decoder/embedding' : 'encoder/embedding', tensorValue(w.srcEmbedding));
  let x = g.op('Add', [
    g.op('Mul', [g.op('Gather', [E, ids]), g.constFloat(Math.sqrt(d))]),
    positionVectorsOnnx(g, w.srcPositions, 'encoder/positions', positions),
  ]);
  for (const layer of w.encoder) {
    x = residualOnnx(g, model, x, layer.ln1, (h) =>
      attendHeadsOnnx(
        g,
        layer.self,
        h,
        projectHeadsOnnx(g, layer.self, 'k', h),
        projectHeadsOnnx(g, layer.self, 'v', h),
        bias,
      ),
    );
    x = residualOnnx(g, model, x, layer.ln2, (h) => feedForwardOnnx(g, layer.ff, h));
  }
  if (w.encoderNorm) x = layerNormOnnx(g, w.encoderNorm, x);
  let empty = '';
  w.decoder.forEach((layer, l) => {
    const k = projectHeadsOnnx(g, layer.cross, 'k', x);
    g.output(k, `cross_k_${l}`, 'float32', ['batch', heads, 'src_len', dk]);
    g.output(projectHeadsOnnx(g, layer.cross, 'v', x), `cross_v_${l}`, 'float32', ['batch', heads, 'src_len', dk]);
    // The empty caches [B, h, 0, d/h]: a zero-length slice of a [B, h, S, d/h] value.
    if (l === 0) empty = g.slice(k, [0], [0], [2]);
  });
  for (const name of model.stateNames) g.output(empty, name, 'float32', ['batch', heads, 'past_len', dk]);
  g.output(mask, 'src_mask', 'float32', ['batch', 'src_len']);
  return g;
}

function decoderGraph(model: TransformerModel, opset: number, storeFrozen: boolean): GraphBuilder {
  const g = new GraphBuilder('frost-transformer-decoder-step', { opset });
  const { model: d, heads } = model.cfg;
  const dk = d / heads;
  const w = model.w;
  const V = model.sizes.tgtVocab;
  const prev = g.input('prev_token', 'int64', ['rows']);
  const layers = w.decoder.map((_, l) => ({
    pastK: g.input(`self_k_${l}`, 'float32', ['rows', heads, 'past_len', dk]),
    pastV: g.input(`self_v_${l}`, 'float32', ['rows', heads, 'past_len', dk]),
  }));
  const cross = w.decoder.map((_, l) => ({
    k: g.input(`cross_k_${l}`, 'float32', ['rows', heads, 'src_len', dk]),
    v: g.input(`cross_v_${l}`, 'float32', ['rows', heads, 'src_len', dk]),
  }));
  const mask = g.input('src_mask', 'float32', ['rows', 'src_len']);
  const srcBias = keyPaddingBiasOnnx(g, mask);
  // Heads that rescale E's rows store E once for both the lookup and the output projection.
  const shared = model.head.sharedEmbeddingOnnx?.(g);
  const embedding = shared?.matrix ?? g.initializer('decoder/embedding', tensorValue(w.tgtEmbedding));
  const e = shared ? shared.lookup(prev) : g.op('Gather', [embedding, prev]);
  // The position being decoded is the number of positions cached so far.
  const position = g.op('Gather', [g.op('Shape', [layers[0]!.pastK]), g.constInt64(2)]);
  // The step's rows stay [rows, d]: onnxruntime fuses each 2-D MatMul + Add into one Gemm, and one position's
  // heads split and merge by Reshape alone (multi-head-attention.ts's step functions).
  let x = g.op('Add', [
    g.op('Mul', [e, g.constFloat(Math.sqrt(d))]),
    positionVectorsOnnx(g, w.tgtPositions, 'decoder/positions', position),
  ]);
  w.decoder.forEach((layer, l) => {
    x = residualOnnx(g, model, x, layer.ln1, (h) => {
      const q = projectStepHeadsOnnx(g, layer.self, 'q', h);
      const newK = projectStepHeadsOnnx(g, layer.self, 'k', h);
      const newV = projectStepHeadsOnnx(g, layer.self, 'v', h);
      // The caches are the Concats' own outputs: a renaming Identity would copy them once more per step.
      const [k] = g.node('Concat', [layers[l]!.pastK, newK], { axis: 2 }, { outputs: [`next_self_k_${l}`] });
      const [v] = g.node('Concat', [layers[l]!.pastV, newV], { axis: 2 }, { outputs: [`next_self_v_${l}`] });
      g.output(k!, `next_self_k_${l}`, 'float32', ['rows', heads, 'next_len', dk]);
      g.output(v!, `next_self_v_${l}`, 'float32', ['rows', heads, 'next_len', dk]);
      return attendStepOnnx(g, layer.self, q, k!, v!, null);
    });
    x = residualOnnx(g, model, x, layer.ln2, (h) =>
      attendStepOnnx(g, layer.cross, projectStepHeadsOnnx(g, layer.cross, 'q', h), cross[l]!.k, cross[l]!.v, srcBias),
    );
    x = residualOnnx(g, model, x, layer.ln3, (h) => feedForwardOnnx(g, layer.ff, h));
  });
  if (w.decoderNorm) x = layerNormOnnx(g, w.decoderNorm, x);
  const logits = g.scope('head', () => model.head.toOnnx(g, x, { embedding, storeFrozen }));
  emitStepLogProbs(g, logits, V);
  return g;
}
