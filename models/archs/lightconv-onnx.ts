import { GraphBuilder } from '../../core/onnx/graph-builder.ts';
import type { ModelCard } from '../../core/runtime/model-card.ts';
import { dynamicConvOnnx, dynamicConvStepOnnx, zeroWindowOnnx } from '../layers/dynamic-conv-onnx.ts';
import { feedForwardOnnx } from '../layers/feed-forward.ts';
import { layerNormOnnx } from '../layers/layer-norm.ts';
import { encoderPadLeft, type ConvBlockWeights } from '../layers/lightconv-block.ts';
import { keyPaddingBiasOnnx } from '../layers/multi-head-attention.ts';
import { tensorValue } from '../onnx-values.ts';
import { encoderDecoderOnnx } from './graph-spec.ts';
import type { LightConvModel } from './lightconv.ts';
import {
  crossAttentionStepOnnx,
  crossMemoryInputs,
  crossMemoryOnnx,
  residualOnnx,
  sourceEmbeddingOnnx,
  stepLogProbsOnnx,
  targetEmbeddingOnnx,
} from './residual-seq2seq-onnx.ts';
import type { OnnxGraphOptions } from './types.ts';

/**
 * LightConv's and DynamicConv's two graphs (lightconv.ts). The encoder graph returns the source mask, each decoder
 * layer's source keys and values (computed once per sentence, as the Transformer's), and the decoder's initial
 * state: `position` zeros [batch] and, per decoder layer with a kernel wider than 1, `conv_window_l` zeros
 * [batch, K − 1, d] (the causal convolution's padding). The decoder-step graph reads one token per row with that
 * state, convolves the window and the new input (models/layers/dynamic-conv-onnx.ts), returns the last K − 1
 * inputs as `next_conv_window_l` and `next_position` = position + 1, and ends with `log_probs` and each row's
 * top-k (graph-spec.ts's emitStepLogProbs). No state grows: a step at position 50 does the work of a step at
 * position 1. Both graphs have dynamic batch (rows) and length axes; `position` is int64 here (int32 in tfjs).
 */
export function lightconvOnnx(
  model: LightConvModel,
  opts: OnnxGraphOptions,
): { encoder: GraphBuilder; decoder: GraphBuilder; graphs: ModelCard['graphs'] } {
  const grouped = opts.groupedMemory === true;
  const built = encoderDecoderOnnx(model, ['src_ids', 'src_lengths'], opts, {
    encoder: (opset) => encoderGraph(model, opset),
    decoder: (opset, storeFrozen) => decoderGraph(model, opset, storeFrozen, grouped),
  });
  if (grouped) built.graphs.decoder.groupedMemory = true;
  return built;
}

/** The convolution's input u [..., d]: x Win + bin, then GLU (with glu). */
function convInputOnnx(g: GraphBuilder, w: ConvBlockWeights, x: string): string {
  const u = g.op('Add', [
    g.op('MatMul', [x, g.initializer(`${w.name}/Win`, tensorValue(w.Win))]),
    g.initializer(`${w.name}/bin`, tensorValue(w.bin)),
  ]);
  if (!w.glu) return u;
  const d = w.Wout.shape[0]!;
  const [a, b] = g.split(u, -1, [d, d]);
  return g.op('Mul', [a!, g.op('Sigmoid', [b!])]);
}

/**
 * The normalised kernels (no DropConnect: inference): softmax_K(kernel) [H, K] (lightweight), or softmax_K(u Wkernel)
 * per position (dynamic), shaped `lead` (0 copies u's leading dims) + [H, K].
 */
function convKernelsOnnx(g: GraphBuilder, w: ConvBlockWeights, u: string, lead: number[]): string {
  const kernel = g.initializer(`${w.name}/kernel`, tensorValue(w.kernel));
  if (w.kind === 'lightweight') return g.op('Softmax', [kernel], { axis: -1 });
  const perPosition = g.op('Reshape', [g.op('MatMul', [u, kernel]), g.constInt64([...lead, w.heads, w.width])]);
  return g.op('Softmax', [perPosition], { axis: -1 });
}

function convOutputOnnx(g: GraphBuilder, w: ConvBlockWeights, y: string): string {
  return g.op('Add', [
    g.op('MatMul', [y, g.initializer(`${w.name}/Wout`, tensorValue(w.Wout))]),
    g.initializer(`${w.name}/bout`, tensorValue(w.bout)),
  ]);
}

function convShape(model: LightConvModel, w: ConvBlockWeights) {
  return { channels: model.cfg.model, heads: w.heads, width: w.width, dynamic: w.kind === 'dynamic' };
}

function encoderGraph(model: LightConvModel, opset: number): GraphBuilder {
  const g = new GraphBuilder(`frost-${model.arch}-encoder`, { opset });
  const d = model.cfg.model;
  const w = model.w;
  const source = sourceEmbeddingOnnx(g, model);
  const { ids, mask } = source;
  let x = source.x;
  const mask3 = g.unsqueeze(mask, [2]);
  for (const layer of w.encoder) {
    const block = layer.conv;
    x = residualOnnx(g, model, x, layer.ln1, (h) => {
      // The padded source positions of the convolution's input are zeros, as in training (fairseq's masked_fill).
      const u = g.op('Mul', [convInputOnnx(g, block, h), mask3]);
      const kernels = convKernelsOnnx(g, block, u, [0, 0]);
      const shape = convShape(model, block);
      return convOutputOnnx(g, block, dynamicConvOnnx(g, u, kernels, shape, encoderPadLeft(block.width)));
    });
    x = residualOnnx(g, model, x, layer.ln2, (h) => feedForwardOnnx(g, layer.ff, h));
  }
  if (w.encoderNorm) x = layerNormOnnx(g, w.encoderNorm, x);
  crossMemoryOnnx(g, model, x, mask);
  // The decoder's initial state: nothing decoded, windows of zeros.
  const batch = g.slice(g.op('Shape', [ids]), [0], [1], [0]);
  const zero = { dtype: 'int64' as const, dims: [1], data: new BigInt64Array([0n]) };
  g.output(g.op('ConstantOfShape', [batch], { value: zero }), 'position', 'int64', ['batch']);
  w.decoder.forEach(({ conv }, l) => {
    if (conv.width === 1) return;
    g.output(zeroWindowOnnx(g, batch, conv.width - 1, d), `conv_window_${l}`, 'float32', ['batch', conv.width - 1, d]);
  });
  return g;
}

function decoderGraph(model: LightConvModel, opset: number, storeFrozen: boolean, grouped: boolean): GraphBuilder {
  const g = new GraphBuilder(`frost-${model.arch}-decoder-step`, { opset });
  const d = model.cfg.model;
  const w = model.w;
  const prev = g.input('prev_token', 'int64', ['rows']);
  const position = g.input('position', 'int64', ['rows']);
  const windows = w.decoder.map(({ conv }, l) =>
    conv.width > 1 ? g.input(`conv_window_${l}`, 'float32', ['rows', conv.width - 1, d]) : undefined,
  );
  const memory = crossMemoryInputs(g, model, grouped);
  const srcBias = keyPaddingBiasOnnx(g, memory.mask);
  // Rows stay [rows, d], as in the Transformer's step (onnxruntime fuses each projection into a Gemm).
  const start = targetEmbeddingOnnx(g, model, prev, position);
  const embedding = start.embedding;
  let x = start.x;
  w.decoder.forEach((layer, l) => {
    const block = layer.conv;
    x = residualOnnx(g, model, x, layer.ln1, (h) => {
      const u = convInputOnnx(g, block, h);
      const kernels = convKernelsOnnx(g, block, u, [0]);
      const step = dynamicConvStepOnnx(g, windows[l], u, kernels, convShape(model, block));
      if (step.window) g.output(step.window, `next_conv_window_${l}`, 'float32', ['rows', block.width - 1, d]);
      return convOutputOnnx(g, block, step.y);
    });
    x = residualOnnx(g, model, x, layer.ln2, (h) => crossAttentionStepOnnx(g, layer.cross, h, memory, srcBias, l));
    x = residualOnnx(g, model, x, layer.ln3, (h) => feedForwardOnnx(g, layer.ff, h));
  });
  stepLogProbsOnnx(g, model, x, embedding, storeFrozen);
  g.output(g.op('Add', [position, g.constInt64(1)]), 'next_position', 'int64', ['rows']);
  return g;
}
