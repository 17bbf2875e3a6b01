/**
 * `onnx/decoder_model_merged.onnx`: frost's decoder-step graph read as Optimum's merged decoder (one graph for
 * the first step and the cached ones, picked by `use_cache_branch`).
 *
 * - `input_ids` [batch_size, 1] is the previous token; the position is the decoder caches' length, read from
 *   their shape inside frost's step graph, so the first step's empty caches (0 positions) mean position 0.
 * - Each decoder layer's keys and values over the source: on the first step (`use_cache_branch` false) they are
 *   projected from `encoder_hidden_states` by the projections frost's encoder graph holds, and the decoder caches
 *   start empty whatever was fed; on later steps both are the `past_key_values.*` earlier steps returned.
 * - `logits` [batch_size, 1, V] are frost's log-probabilities (a log-softmax changes neither the argmax nor the
 *   sampling distribution), heads' frozen matrices regenerated in the graph as in frost's own export.
 */
import type {
  AttributeProtoObject,
  GraphProtoObject,
  ModelProtoObject,
  NodeProtoObject,
} from '../../core/onnx/proto.ts';
import { encoderHiddenState, int64Bytes } from './encoder-model.ts';
import { spliceGraph } from './graph-splice.ts';
import {
  BATCH,
  cacheName,
  DECODER_LENGTH,
  ENCODER_CACHE_LENGTH,
  ENCODER_LENGTH,
  PAST_LENGTH,
  PRESENT_LENGTH,
  tensorInfo,
} from './optimum-names.ts';
import type { TransformerShape } from './transformer-shape.ts';

const GRAPH_ATTRIBUTE = 5;
const KV = [
  ['k', 'key'],
  ['v', 'value'],
] as const;

function node(
  op_type: string,
  input: string[],
  output: string,
  attribute: AttributeProtoObject[] = [],
): NodeProtoObject {
  return { name: `${output}/${op_type}`, op_type, input, output: [output], attribute };
}

/**
 * The caches frost's step reads, picked by `use_cache_branch`: each layer's source keys and values (`cross_k_<l>`,
 * `cross_v_<l>`) and its decoder keys and values so far (`self_k_<l>`, `self_v_<l>`). Cached: what earlier steps
 * returned. First step: the source projections applied to `encoder_hidden_states`, and no decoder positions
 * (the fed caches cut to length 0, so a placeholder of any length, as Optimum feeds one, is ignored).
 */
function selectCaches(
  frostEncoder: ModelProtoObject,
  shape: TransformerShape,
): { node: NodeProtoObject; initializers: GraphProtoObject['initializer']; outputs: string[] } {
  const { decoderLayers, heads, headSize } = shape;
  const layers = Array.from({ length: decoderLayers }, (_, l) => l);
  const crossNames = layers.flatMap((l) => KV.map(([kv]) => `cross_${kv}_${l}`));
  const selfNames = layers.flatMap((l) => KV.map(([kv]) => `self_${kv}_${l}`));
  const pastCross = layers.flatMap((l) => KV.map(([, which]) => cacheName('past_key_values', l, 'encoder', which)));
  const pastSelf = layers.flatMap((l) => KV.map(([, which]) => cacheName('past_key_values', l, 'decoder', which)));
  const branch = (name: string, nodes: NodeProtoObject[]): GraphProtoObject => ({
    name,
    node: nodes,
    initializer: [],
    input: [],
    output: [
      ...crossNames.map((n) => tensorInfo(`${name}/${n}`, 'float32', [BATCH, heads, ENCODER_CACHE_LENGTH, headSize])),
      ...selfNames.map((n) => tensorInfo(`${name}/${n}`, 'float32', [BATCH, heads, PAST_LENGTH, headSize])),
    ],
  });
  const cached = branch('cached', [
    ...pastCross.map((past, i) => node('Identity', [past], `cached/${crossNames[i]}`)),
    ...pastSelf.map((past, i) => node('Identity', [past], `cached/${selfNames[i]}`)),
  ]);
  const hidden = encoderHiddenState(frostEncoder, shape);
  const projections = spliceGraph(frostEncoder.graph, 'cross', { [hidden]: 'encoder_hidden_states' }, crossNames);
  const first = branch('first', [
    ...projections.nodes,
    ...crossNames.map((n) => node('Identity', [projections.values[n]!], `first/${n}`)),
    ...pastSelf.map((past, i) => node('Slice', [past, 'zero', 'zero', 'axis_2'], `first/${selfNames[i]}`)),
  ]);
  const outputs = [...crossNames, ...selfNames];
  return {
    node: {
      name: 'caches/If',
      op_type: 'If',
      input: ['use_cache_branch'],
      output: outputs,
      attribute: [
        { name: 'then_branch', type: GRAPH_ATTRIBUTE, g: cached },
        { name: 'else_branch', type: GRAPH_ATTRIBUTE, g: first },
      ],
    },
    // In the outer graph, which both branches may read.
    initializers: [int64('zero', 0), int64('axis_2', 2), ...projections.initializers],
    outputs,
  };
}

/** A one-element int64 initializer. */
function int64(name: string, value: number): GraphProtoObject['initializer'][number] {
  return { name, dims: [1], data_type: 7 /* INT64 */, raw_data: int64Bytes([value]) };
}

export function decoderModel(
  frostEncoder: ModelProtoObject,
  frostDecoder: ModelProtoObject,
  shape: TransformerShape,
): ModelProtoObject {
  const { decoderLayers, heads, headSize, model, vocab } = shape;
  const layers = Array.from({ length: decoderLayers }, (_, l) => l);
  const caches = selectCaches(frostEncoder, shape);
  const feeds: Record<string, string> = { prev_token: 'prev_token', src_mask: 'src_mask' };
  for (const name of caches.outputs) feeds[name] = name;
  const nextSelf = layers.flatMap((l) => KV.map(([kv]) => `next_self_${kv}_${l}`));
  const step = spliceGraph(frostDecoder.graph, 'frost', feeds, ['log_probs', ...nextSelf]);
  const presents = layers.flatMap((l) =>
    KV.flatMap(([kv, which]) => [
      node('Identity', [step.values[`next_self_${kv}_${l}`]!], cacheName('present', l, 'decoder', which)),
      node('Identity', [`cross_${kv}_${l}`], cacheName('present', l, 'encoder', which)),
    ]),
  );
  const pastInputs = layers.flatMap((l) =>
    (['decoder', 'encoder'] as const).flatMap((side) =>
      KV.map(([, which]) =>
        tensorInfo(cacheName('past_key_values', l, side, which), 'float32', [
          BATCH,
          heads,
          side === 'decoder' ? PAST_LENGTH : ENCODER_CACHE_LENGTH,
          headSize,
        ]),
      ),
    ),
  );
  const presentOutputs = layers.flatMap((l) =>
    (['decoder', 'encoder'] as const).flatMap((side) =>
      KV.map(([, which]) =>
        tensorInfo(cacheName('present', l, side, which), 'float32', [
          BATCH,
          heads,
          side === 'decoder' ? PRESENT_LENGTH : ENCODER_CACHE_LENGTH,
          headSize,
        ]),
      ),
    ),
  );
  return {
    ...frostDecoder,
    // The encoder's projections run here too: every operator domain either graph uses.
    opset_import: mergedOpsets(frostEncoder, frostDecoder),
    graph: {
      name: 'frost-transformer-decoder-merged-optimum',
      node: [
        // One position per call: frost's step reads the previous token, [batch_size].
        node('Squeeze', ['input_ids', 'axis_1'], 'prev_token'),
        node('Cast', ['encoder_attention_mask'], 'src_mask', [{ name: 'to', type: 2 /* INT */, i: 1 /* FLOAT */ }]),
        caches.node,
        ...step.nodes,
        node('Unsqueeze', [step.values.log_probs!, 'axis_1'], 'logits'),
        ...presents,
      ],
      initializer: [int64('axis_1', 1), ...caches.initializers, ...step.initializers],
      input: [
        tensorInfo('encoder_attention_mask', 'int64', [BATCH, ENCODER_LENGTH]),
        tensorInfo('input_ids', 'int64', [BATCH, DECODER_LENGTH]),
        tensorInfo('encoder_hidden_states', 'float32', [BATCH, ENCODER_LENGTH, model]),
        ...pastInputs,
        tensorInfo('use_cache_branch', 'bool', [1]),
      ],
      output: [tensorInfo('logits', 'float32', [BATCH, DECODER_LENGTH, vocab]), ...presentOutputs],
    },
  };
}

/** The opset imports of both models, each domain at the higher version. */
function mergedOpsets(...models: ModelProtoObject[]): ModelProtoObject['opset_import'] {
  const versions = new Map<string, number>();
  for (const m of models)
    for (const { domain, version } of m.opset_import)
      versions.set(domain, Math.max(version, versions.get(domain) ?? 0));
  return [...versions].map(([domain, version]) => ({ domain, version }));
}
