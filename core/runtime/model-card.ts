import { z } from 'zod';
import { fairseqSpecSchema } from '../subword/fairseq-tokenizer.ts';
import { marianSpecSchema } from '../subword/marian-tokenizer.ts';
import { subwordSpecSchema } from '../subword/subword-spec.ts';
import { describeIssues } from '../zod-issues.ts';
import { parseCardJson } from './card-json.ts';

/**
 * The model card: plain JSON beside the ONNX files of an exported model. Everything a runtime needs
 * to tokenise, run the graphs and decode comes from here, so `serve`, the CLI and the browser share
 * one reader and never import tfjs.
 */

export const vocabularySchema = z.object({
  lang: z.string(),
  /** Token strings by id; ids 0..3 are the specials below. */
  tokens: z.array(z.string()).min(4),
});

export const specialsSchema = z.object({
  pad: z.number().int(),
  unk: z.number().int(),
  bos: z.number().int(),
  eos: z.number().int(),
});

/**
 * How the two graphs talk. The encoder's outputs are named like the decoder's inputs they feed:
 * each name in `state` is a per-row recurrent input whose next value the step graph returns as
 * `next_<name>`; each name in `memory` is a per-row constant (encoder outputs, masks).
 */
const graphsSchema = z.object({
  encoder: z.object({
    file: z.string(),
    inputs: z.array(z.string()),
    outputs: z.array(z.string()),
  }),
  decoder: z.object({
    file: z.string(),
    token: z.string(),
    state: z.array(z.string()),
    memory: z.array(z.string()),
    logProbs: z.string(),
    /**
     * Optional outputs with each row's `k` largest log-probabilities (descending, ties: lower id first)
     * and their token ids (int32), so search can pick tokens without copying and scanning whole rows
     * (docs/decoding-speed.md). Graphs exported before these existed lack them and decode from
     * `logProbs` alone.
     */
    top: z
      .object({
        logProbs: z.string(),
        tokens: z.string(),
        k: z.number().int().positive(),
      })
      .optional(),
    /**
     * Present when the step graph reads its `memory` inputs with one row per source instead of one per step row:
     * the step's rows are then equal groups of consecutive rows, one group per memory row (beam search's beams of a
     * sentence side by side, a group of one in greedy search), and each source's keys serve its group in one
     * product. The runtime feeds one memory row per group, or one per row (groups of one) when the rows are not in
     * equal groups (core/runtime/row-state.ts's MemoryStore).
     */
    groupedMemory: z.literal(true).optional(),
    /**
     * How the step graph carries its key/value caches. Absent: each state input's next value is the
     * output `next_<name>` (the whole cache, grown by Concat), fed back as is. `append`: each state named
     * in `states` is a buffer with spare capacity along `axis`, of which the first `length` positions
     * (an int64 scalar input) are filled; the graph attends over those and returns only the new
     * position under the output `states[name]`, which the runtime writes into the buffer
     * (core/runtime/append-cache.ts), so no step copies a whole cache out (docs/decoding-speed.md).
     */
    cache: z
      .object({
        kind: z.literal('append'),
        length: z.string(),
        axis: z.number().int().positive(),
        states: z.record(z.string(), z.string()),
      })
      .optional(),
  }),
});

export const paramCountsSchema = z.object({
  learnable: z.number().int().nonnegative(),
  frozen: z.number().int().nonnegative(),
  /** Frozen parameters the graph regenerates from a seed or structure instead of storing. */
  generated: z.number().int().nonnegative(),
});

const bytesRecord = z.record(z.string(), z.number().int().nonnegative());

/**
 * Where the bytes go (export/size-report.ts): initializer payload bytes per component (embeddings,
 * encoder, decoder, head, other), per graph file, per scope and per element type, and the median
 * time onnxruntime-node takes to create each graph's session. Optional: older cards lack it.
 */
const sizeSchema = z.object({
  components: bytesRecord,
  byFile: z.record(z.string(), bytesRecord),
  scopes: bytesRecord,
  dtypes: bytesRecord,
  sessionCreateMs: z.record(z.string(), z.number().nonnegative()).optional(),
});

/**
 * How an fp16/int8 export compares with its float32 original (export/precision-check.ts): greedy
 * BLEU of both through onnxruntime on the validation split (absent when the corpus was not at
 * hand), file bytes of both, and the largest log-prob drift from tfjs (recorded, not held to the
 * float32 parity tolerance). Only in cards of non-fp32 exports.
 */
const precisionCheckSchema = z.object({
  reference: z.literal('fp32'),
  precision: z.enum(['fp32', 'fp16', 'int8', 'int8-compute']),
  sentences: z.number().int().nonnegative(),
  bleuFp32: z.number().optional(),
  bleu: z.number().optional(),
  bleuDelta: z.number().optional(),
  bytesFp32: z.number().int().nonnegative(),
  bytes: z.number().int().nonnegative(),
  convertedWeights: z.number().int().nonnegative(),
  maxAbsLogProbDiff: z.number(),
});

/**
 * How a caption model's input is made from a decoded image (core/image/preprocess.ts's ImageSpec):
 * centre-crop and resize to `size`², then (level / 255 − mean) / std per RGB channel. Every client
 * (server, CLI, browser) preprocesses with these numbers, so they all feed the model what it was
 * trained on.
 */
const rgb = z.tuple([z.number(), z.number(), z.number()]);
export const imageSpecSchema = z.object({
  size: z.number().int().positive(),
  mean: rgb,
  std: z.tuple([z.number().positive(), z.number().positive(), z.number().positive()]),
});

export const modelCardSchema = z
  .object({
    format: z.literal('frost-model'),
    version: z.literal(1),
    name: z.string(),
    task: z.enum(['translation', 'caption']),
    arch: z.string(),
    preset: z.string(),
    head: z.object({ name: z.string() }).catchall(z.unknown()),
    source: vocabularySchema.optional(),
    target: vocabularySchema,
    /** Caption models: the image preprocessing (required when `task` is 'caption'). */
    image: imageSpecSchema.optional(),
    specials: specialsSchema,
    tokenizer: z.string(),
    /** Subword models (tokenizer 'sentencepiece'): the `.model` files beside the card and the normalisation. */
    subword: subwordSpecSchema.optional(),
    /** Marian's tokenisation (tokenizer 'marian', an imported opus-mt model): its SentencePiece files. */
    marian: marianSpecSchema.optional(),
    /** fairseq's tokenisation (tokenizer 'fairseq', an imported fairseq model): its BPE and that BPE's file. */
    fairseq: fairseqSpecSchema.optional(),
    graphs: graphsSchema,
    params: paramCountsSchema.extend({ byComponent: z.record(z.string(), z.number().int()) }),
    files: z.record(z.string(), z.object({ bytes: z.number().int(), gzipBytes: z.number().int().optional() })),
    precision: z.enum(['fp32', 'fp16', 'int8', 'int8-compute']).default('fp32'),
    precisionCheck: precisionCheckSchema.optional(),
    size: sizeSchema.optional(),
    config: z.record(z.string(), z.unknown()),
    metrics: z.record(z.string(), z.number()).default({}),
    created: z.string(),
  })
  .refine((card) => card.task !== 'caption' || card.image !== undefined, {
    message: "a caption model's card needs 'image' (its size, mean and std)",
    path: ['image'],
  });

export type ModelCard = z.infer<typeof modelCardSchema>;
export type ModelCardInput = z.input<typeof modelCardSchema>;

export const MODEL_CARD_FILE = 'model-card.json';

/** Parses card JSON text; the error names `where` (a path or URL) so a corrupt file is easy to find. */
export function parseModelCard(text: string, where: string): ModelCard {
  const json = parseCardJson(text, where);
  const parsed = modelCardSchema.safeParse(json);
  if (!parsed.success) {
    throw new Error(`${where}: not a valid model card (${describeIssues(parsed.error.issues, { max: 5 })})`);
  }
  return parsed.data;
}
