/**
 * Writes an exported model as a Triton Inference Server model repository: two models on the
 * onnxruntime backend, `<name>_encoder` and `<name>_decoder` (one decoder step), each with its
 * config.pbtxt, plus the model card and a README. Search (greedy or beam) stays on the client,
 * exactly as frost's own runtime does it (core/decode over encoder + step graph), so Triton serves
 * the two graphs and batches requests; it runs no frost code.
 *
 * The configs are derived from the ONNX graphs themselves (names, element types, ranks), so they
 * cannot drift from what was exported.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelCard } from '../core/runtime/model-card.ts';
import { type GraphValueInfo, readGraphInfo } from './inspect-graph.ts';
import { formatPbtxt, type PbMessage, pbEnum } from './triton-pbtxt.ts';

/** Options of {@link writeTritonRepository}. */
export interface TritonOptions {
  /** Largest batch Triton may form. @default 64 */
  maxBatchSize?: number;
  /** How long the dynamic batcher waits to fill a batch. @default 100 */
  maxQueueDelayMicroseconds?: number;
}

/** What {@link writeTritonRepository} wrote. */
export interface TritonRepository {
  dir: string;
  /** Triton model names: `<name>_encoder`, `<name>_decoder`. */
  models: { encoder: string; decoder: string };
  /** config.pbtxt text by model name. */
  configs: Record<string, string>;
}

/** Triton data types by element type name (inspect-graph's names). */
const TRITON_TYPES: Readonly<Record<string, string>> = {
  float32: 'TYPE_FP32',
  float16: 'TYPE_FP16',
  float64: 'TYPE_FP64',
  bfloat16: 'TYPE_BF16',
  int8: 'TYPE_INT8',
  int16: 'TYPE_INT16',
  int32: 'TYPE_INT32',
  int64: 'TYPE_INT64',
  uint8: 'TYPE_UINT8',
  uint16: 'TYPE_UINT16',
  uint32: 'TYPE_UINT32',
  uint64: 'TYPE_UINT64',
  bool: 'TYPE_BOOL',
  string: 'TYPE_STRING',
};

/** The Triton data type of an ONNX element type name. */
function tritonDataType(elemType: string): string {
  const t = TRITON_TYPES[elemType];
  if (t === undefined) throw new Error(`no Triton data type for ONNX element type '${elemType}'`);
  return t;
}

/** A Triton model name from a card name: Triton wants a plain directory name. */
export function tritonModelName(name: string): string {
  const clean = name.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^[.-]+/, '');
  return clean === '' ? 'model' : clean;
}

/**
 * The batch dimension Triton may batch on: the symbolic first dim shared by every input and
 * output ('batch' for frost's encoder, 'rows' for its step graph), or null when there is none.
 */
function batchDim(values: readonly GraphValueInfo[]): string | null {
  const first = values.map((v) => v.dims[0]);
  const name = first[0];
  return typeof name === 'string' && first.every((d) => d === name) ? name : null;
}

/** One input/output entry. With batching, the batch dim is left out, as Triton requires. */
function tensorConfig(v: GraphValueInfo, batching: boolean): PbMessage {
  const dims = (batching ? v.dims.slice(1) : v.dims).map((d) => (typeof d === 'number' ? d : -1));
  const entry: PbMessage = { name: v.name, data_type: pbEnum(tritonDataType(v.elemType)) };
  if (dims.length === 0) {
    // A per-row scalar ([batch] in ONNX): Triton needs at least one dim, so it is declared [1]
    // and reshaped away before the model sees it (Triton's documented idiom).
    entry.dims = [1];
    entry.reshape = { shape: [] };
  } else {
    entry.dims = dims;
  }
  return entry;
}

/**
 * The config.pbtxt message of one graph: onnxruntime_onnx, batching on the shared symbolic first
 * dim when the graph has one (max_batch_size 0 and full dims otherwise), dynamic batching.
 */
export function tritonConfig(modelName: string, onnx: Uint8Array, opts: TritonOptions = {}): PbMessage {
  const maxBatchSize = opts.maxBatchSize ?? 64;
  if (!Number.isInteger(maxBatchSize) || maxBatchSize < 1)
    throw new Error(`maxBatchSize must be an integer >= 1, got ${maxBatchSize}`);
  const info = readGraphInfo(onnx);
  const batching = batchDim([...info.inputs, ...info.outputs]) !== null;
  const config: PbMessage = {
    name: modelName,
    platform: 'onnxruntime_onnx',
    max_batch_size: batching ? maxBatchSize : 0,
    input: info.inputs.map((v) => tensorConfig(v, batching)),
    output: info.outputs.map((v) => tensorConfig(v, batching)),
  };
  if (batching) config.dynamic_batching = { max_queue_delay_microseconds: opts.maxQueueDelayMicroseconds ?? 100 };
  return config;
}

/** What the README says after a card's precision; inputs and outputs are float32/int64 at every precision. */
const PRECISION_NOTES: Readonly<Record<ModelCard['precision'], string>> = {
  fp32: '',
  fp16: ' (restored to float32 inside the graph; inputs and outputs are float32/int64 either way)',
  int8: ' (restored to float32 inside the graph; inputs and outputs are float32/int64 either way)',
  'int8-compute':
    ' (integer MatMul kernels, activations quantised per call; inputs and outputs are float32/int64 either way)',
};

function readme(card: ModelCard, models: { encoder: string; decoder: string }, cardFile: string): string {
  const dec = card.graphs.decoder;
  return `# ${card.name}: Triton model repository (written by \`frost export --triton\`)

Serve it with \`tritonserver --model-repository=<this folder>\` (onnxruntime backend).

Two models, because translation is a loop that runs on the client:

- \`${models.encoder}\` runs once per batch of sentences: inputs ${card.graphs.encoder.inputs.map((n) => `\`${n}\``).join(', ')}
  (source token ids padded with <pad> = ${card.specials.pad}, and their lengths); outputs the decoder's
  initial state ${dec.state.map((n) => `\`${n}\``).join(', ')} and its memory ${dec.memory.map((n) => `\`${n}\``).join(', ')}.
- \`${models.decoder}\` runs once per output token: inputs \`${dec.token}\` (the previous token, <s> = ${card.specials.bos}
  first), the state and the memory; outputs \`${dec.logProbs}\` (log-probabilities over the target
  vocabulary) and \`next_<state>\` for each state input.

Search (greedy or beam) runs client-side, as in frost's own runtime (\`core/decode\`: \`generate\` over
\`Seq2SeqRuntime.stepModel\`): feed \`next_<state>\` back as the state, reorder rows when beams are
re-ranked, stop at </s> = ${card.specials.eos}. Tokenisation and the vocabularies are in
\`${cardFile}\` (frost's model card: \`source.tokens\`, \`target.tokens\`, \`tokenizer\`, \`specials\`).

Batching: the first dim of every input and output is the batch (rows); the configs leave it out,
as Triton requires when max_batch_size > 0. The dynamic batcher only merges requests whose other
dims agree, so encoder requests batch when their padded source lengths match, and step requests
when their source lengths (the memory's second dim) match; send the sentences of one request
padded together to get the most out of it.

Precision of the weights: ${card.precision}${PRECISION_NOTES[card.precision]}.
`;
}

/**
 * Writes `dir/<name>_encoder/{config.pbtxt,1/model.onnx}`, the same for the decoder,
 * `dir/<name>.model-card.json` and `dir/README.md`. Files at the top of a model repository are
 * ignored by Triton, which only loads model folders.
 */
export async function writeTritonRepository(
  dir: string,
  card: ModelCard,
  graphs: { encoder: Uint8Array; decoder: Uint8Array },
  opts: TritonOptions = {},
): Promise<TritonRepository> {
  const base = tritonModelName(card.name);
  const models = { encoder: `${base}_encoder`, decoder: `${base}_decoder` };
  const configs: Record<string, string> = {};
  for (const role of ['encoder', 'decoder'] as const) {
    const name = models[role];
    configs[name] = formatPbtxt(tritonConfig(name, graphs[role], opts));
    await mkdir(join(dir, name, '1'), { recursive: true });
    await writeFile(join(dir, name, '1', 'model.onnx'), graphs[role]);
    await writeFile(join(dir, name, 'config.pbtxt'), configs[name]);
  }
  const cardFile = `${base}.model-card.json`;
  await writeFile(join(dir, cardFile), `${JSON.stringify(card, null, 1)}\n`);
  await writeFile(join(dir, 'README.md'), readme(card, models, cardFile));
  return { dir, models, configs };
}
