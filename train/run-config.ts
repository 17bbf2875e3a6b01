import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { DEFAULT_IMAGE_SPEC } from '../core/image/preprocess.ts';
import { imageSpecSchema } from '../core/runtime/model-card.ts';
import { fairseqSpecSchema, FAIRSEQ_TOKENIZER } from '../core/subword/fairseq-tokenizer.ts';
import { marianSpecSchema, MARIAN_TOKENIZER } from '../core/subword/marian-tokenizer.ts';
import { isSubwordKind, SUBWORD_KINDS } from '../core/subword/subword-spec.ts';
import { describeIssues } from '../core/zod-issues.ts';
import { writeFileAtomic } from './atomic-write.ts';

/**
 * Everything a training run was started with, saved as `config.json` in the run folder: resuming,
 * exporting and reporting read it and need nothing else. One schema per task (train/tasks/), told
 * apart by `task`; a config without one is a translation run (the only kind before captioning).
 * `RunConfig` is any task's; `TranslationRunConfig` and `CaptionRunConfig` are one task's.
 */

/** Settings every task has. */
const common = {
  arch: z.string(),
  preset: z.string(),
  /** The preset with overrides applied. */
  archConfig: z.record(z.string(), z.unknown()),
  head: z.object({ name: z.string(), options: z.record(z.string(), z.unknown()).default({}) }),
  seed: z.number().int().nonnegative().default(1),
  /**
   * The learning-rate schedule (train/schedules/) by name, the early stop every schedule shares (after
   * `stopAfter` epochs without a validation gain), and that schedule's own options, checked against its
   * schema when training starts. Configs from before the registry have no name: the paper's plateau.
   */
  schedule: z
    .looseObject({
      name: z.string().default('plateau'),
      stopAfter: z.number().int().positive().default(20),
    })
    .default({ name: 'plateau', stopAfter: 20, patience: 8, decay: 0.8 }),
  /** ε of label smoothing (fairseq's label_smoothed_cross_entropy); 0: plain cross-entropy. */
  labelSmoothing: z.number().min(0).lt(1).default(0),
  /**
   * Validate, keep and export an exponential moving average of the weights with this decay
   * (train/optim/parameter-average.ts); absent: the weights themselves.
   */
  emaDecay: z.number().gt(0).lt(1).optional(),
  /** Epoch checkpoints kept in `checkpoints/epoch-NNNN` for `frost export --average-last N`; 0 keeps none. */
  keepLast: z.number().int().nonnegative().default(5),
  /** Stop after this many epochs. */
  epochs: z.number().int().positive().optional(),
  /** Stop after this much training time (validation included), summed over resumes. */
  maxMinutes: z.number().positive().optional(),
  /**
   * Stop after this many optimizer updates (fairseq's --max-update): a budget that, unlike minutes, does not
   * depend on what else the machine is doing, so runs trained under any load end with the same parameters.
   */
  maxUpdates: z.number().int().positive().optional(),
  /** Save the `last` checkpoint this often inside an epoch too. */
  checkpointMinutes: z.number().positive().default(5),
  /**
   * The `frost train` arguments that started the run, as given: how to start it again, and what an experiment grid
   * checks a folder it would resume against (experiments/run-identity.ts). Absent in runs started before it
   * was recorded, or from code rather than the CLI.
   */
  argv: z.array(z.string()).optional(),
};

/**
 * The vocabulary: words (the paper's; a frequency cut, the rest `<unk>`) or subword pieces learned from the
 * training text (core/subword/, never `<unk>`). Subword runs keep their `.model` files in the run folder.
 */
const vocabSchema = (minFreq: number) =>
  z
    .object({
      /** `marian`: an imported Marian model's vocabulary (train/import/marian.ts), with the run's `marian` block. */
      kind: z.enum(['word', ...SUBWORD_KINDS, MARIAN_TOKENIZER, FAIRSEQ_TOKENIZER]).default('word'),
      /** word: keep words seen at least this often. */
      minFreq: z.number().int().positive().default(minFreq),
      /** word: cap on the vocabulary size, specials included. */
      maxSize: z.number().int().positive().optional(),
      /** bpe, unigram: pieces per subword model, specials and the 256 byte pieces included. */
      size: z.number().int().min(261).default(8000),
      /** bpe, unigram: one model and one vocabulary for source and target, and one embedding matrix in the model. */
      joint: z.boolean().default(false),
      /**
       * bpe, unigram: the output layer never predicts a piece absent from the training targets (a joint model's
       * source-only pieces, unused byte pieces): their logits are pinned far below the rest (train/output-support.ts).
       */
      maskUnseen: z.boolean().default(true),
      /**
       * With `maskUnseen`: the output layer scores only the pieces the targets use (models/heads/compact-output.ts),
       * its parameters K rows instead of |V|. `frost train` writes true for new subword translation runs; a
       * config.json without it (an older run, whose checkpoints hold full-size head parameters) keeps scoring all.
       * Optional rather than defaulted, so that absent stays absent and vocabulary literals need not name it.
       */
      compactOutput: z.boolean().optional(),
      /**
       * With `maskUnseen` and label smoothing: ε is spread over the pieces the targets use, so those stay the only
       * ones scored (`--smooth-seen-only`). Absent, smoothing gives every piece of the vocabulary its share, as
       * fairseq's, and the output layer then scores all of them (train/output-support.ts).
       */
      smoothSeenOnly: z.boolean().optional(),
    })
    .refine((v) => isSubwordKind(v.kind) || v.kind === MARIAN_TOKENIZER || v.kind === FAIRSEQ_TOKENIZER || !v.joint, {
      message: `a joint vocabulary needs a subword kind (${SUBWORD_KINDS.join(', ')})`,
      path: ['joint'],
    })
    .refine((v) => !v.smoothSeenOnly || (v.maskUnseen && v.compactOutput === true), {
      message: 'smoothSeenOnly needs a compact output layer (maskUnseen and compactOutput)',
      path: ['smoothSeenOnly'],
    })
    .default({ kind: 'word', minFreq, size: 8000, joint: false, maskUnseen: true });

export type VocabConfig = z.infer<ReturnType<typeof vocabSchema>>;

/** Adam: rate, β₁ and β₂ (`--adam-betas`), ε, and gradient-norm clipping (0: off). */
const optim = (learningRate: number) =>
  z
    .object({
      learningRate: z.number().positive().default(learningRate),
      clipNorm: z.number().nonnegative().default(5),
      betas: z.tuple([z.number().min(0).lt(1), z.number().min(0).lt(1)]).default([0.9, 0.999]),
      epsilon: z.number().positive().default(1e-8),
    })
    .default({ learningRate, clipNorm: 5, betas: [0.9, 0.999], epsilon: 1e-8 });

/**
 * The provenance of an imported run (train/import/): the format read, the folder it was read from, and the SHA-256
 * of every file that went into the run, by name.
 */
export const importedSchema = z.object({
  format: z.string(),
  from: z.string(),
  files: z.record(z.string(), z.object({ sha256: z.string(), bytes: z.number().int().nonnegative() })),
  /** What the import changed and why (the vocabulary's order, the decoder's start row). */
  notes: z.array(z.string()).default([]),
  at: z.string(),
});
export type ImportedProvenance = z.infer<typeof importedSchema>;

export const translationConfigSchema = z.object({
  task: z.literal('translation').default('translation'),
  ...common,
  data: z.object({
    dir: z.string(),
    kind: z.enum(['multi30k', 'plain']),
    src: z.string(),
    tgt: z.string(),
  }),
  /** The word tokeniser, or 'sentencepiece' for subword vocabularies (`vocab.kind` 'bpe' or 'unigram'). */
  tokenizer: z.string().default('multi30k'),
  vocab: vocabSchema(2),
  lengths: z
    .object({ maxSrcLen: z.number().int().positive().default(50), maxTgtLen: z.number().int().positive().default(50) })
    .default({ maxSrcLen: 50, maxTgtLen: 50 }),
  batch: z
    .object({
      maxSentences: z.number().int().positive().default(64),
      maxTokens: z.number().int().positive().optional(),
    })
    .default({ maxSentences: 64 }),
  optim: optim(1e-3),
  /** Validation sentences decoded for BLEU each epoch (the first N of the val split). */
  valSentences: z.number().int().positive().optional(),
  /** Imported runs (`frost import marian`): Marian's SentencePiece files in the run folder, by language. */
  marian: marianSpecSchema.optional(),
  /** Imported fairseq runs (`frost import fairseq`): the BPE and its file in the run folder. */
  fairseq: fairseqSpecSchema.optional(),
  /** Where an imported run's weights came from (`frost import`): the model card repeats it. */
  imported: importedSchema.optional(),
});

/**
 * The image encoder of a caption run: the CNN trained with the decoder, or a pretrained ONNX encoder
 * run frozen (`--encoder some.onnx`). The ONNX file is copied into the run folder as `file`, so
 * resume and export need nothing outside it; `output` is the graph output used as features and
 * `featureShape` its shape per image ([C] or [C, h, w]).
 */
const encoderSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('cnn') }),
  z.object({
    kind: z.literal('onnx'),
    file: z.string(),
    sha256: z.string(),
    input: z.string(),
    output: z.string(),
    featureShape: z.array(z.number().int().positive()),
  }),
]);

export const captionConfigSchema = z.object({
  task: z.literal('caption'),
  ...common,
  /** A caption data set (train/data/captions.ts: Karpathy split JSON or COCO annotations). */
  data: z.object({ dir: z.string() }),
  /** 'caption' for word vocabularies, 'sentencepiece' for subword ones (`vocab.kind` 'bpe' or 'unigram'). */
  tokenizer: z.enum(['caption', 'sentencepiece']).default('caption'),
  /** The paper's minimum word frequency of 5. */
  vocab: vocabSchema(5),
  /** Training captions longer than this many words are left out. */
  lengths: z.object({ maxTgtLen: z.number().int().positive().default(30) }).default({ maxTgtLen: 30 }),
  /** Captions per batch (the paper's 32); all captions of an image go in the same batch, so its CNN pass is shared. */
  batch: z.object({ maxSentences: z.number().int().positive().default(32) }).default({ maxSentences: 32 }),
  /** The paper's Adam learning rate for captioning, 4e-4. */
  optim: optim(4e-4),
  image: imageSpecSchema.default({
    size: DEFAULT_IMAGE_SPEC.size,
    mean: [...DEFAULT_IMAGE_SPEC.mean],
    std: [...DEFAULT_IMAGE_SPEC.std],
  }),
  encoder: encoderSchema.default({ kind: 'cnn' }),
  /** Validation images captioned (greedy) for BLEU-4 each epoch: the first N of the val split. */
  valSentences: z.number().int().positive().default(500),
  /** Where decoded images (and frozen-encoder features) are cached; default: beside the data, else under data/cache. */
  imageCache: z.string().optional(),
});

/**
 * Language modelling (train/lm/): a plain-text corpus read as one token stream, trained with truncated
 * BPTT. `data.dir` absent means the default corpus (Multi30k English + Flickr8k captions).
 */
export const lmConfigSchema = z.object({
  task: z.literal('lm'),
  ...common,
  data: z.object({
    /** A folder with train/valid/test files, or one file split by `split`; absent: the default corpus. */
    dir: z.string().optional(),
    /** One-file corpora: the fractions of its last lines that become valid and test. */
    split: z
      .object({ valid: z.number().positive().lt(0.5), test: z.number().positive().lt(0.5) })
      .default({ valid: 0.05, test: 0.05 }),
  }),
  /** 'whitespace' for pre-tokenised corpora (PTB, WikiText), another word tokeniser, or 'sentencepiece' (bpe). */
  tokenizer: z.string().default('whitespace'),
  /** The language key of the subword model and the card (text is text; it names the .model file). */
  lang: z.string().default('en'),
  vocab: vocabSchema(1),
  /** B parallel streams and T steps per truncated-BPTT window (Zaremba et al.: 20 × 35). */
  batch: z
    .object({ streams: z.number().int().positive().default(20), bptt: z.number().int().positive().default(35) })
    .default({ streams: 20, bptt: 35 }),
  optim: optim(2e-3),
  /** Streams when scoring valid and test (PyTorch's word_language_model uses 10). */
  evalStreams: z.number().int().positive().default(10),
});

export const runConfigSchema = z.discriminatedUnion('task', [
  translationConfigSchema,
  captionConfigSchema,
  lmConfigSchema,
]);

/** A translation run's config. */
export type TranslationRunConfig = z.infer<typeof translationConfigSchema>;
export type TranslationRunConfigInput = z.input<typeof translationConfigSchema>;
export type CaptionRunConfig = z.infer<typeof captionConfigSchema>;
export type CaptionRunConfigInput = z.input<typeof captionConfigSchema>;
export type LmRunConfig = z.infer<typeof lmConfigSchema>;
export type LmRunConfigInput = z.input<typeof lmConfigSchema>;
/** Any task's run config. */
export type RunConfig = z.infer<typeof runConfigSchema>;
export type TaskName = RunConfig['task'];

export const RUN_FILES = {
  config: 'config.json',
  srcVocab: 'vocab.src.json',
  tgtVocab: 'vocab.tgt.json',
  metrics: 'metrics.jsonl',
  last: 'checkpoints/last',
  best: 'checkpoints/best',
  /** Holds the kept epoch checkpoints, `epoch-0001` … (train/run-folder.ts names them). */
  checkpoints: 'checkpoints',
  /** Held while a trainer runs on the folder (train/run-lock.ts); never a checkpoint, never exported. */
  lock: 'train.lock',
  /**
   * What ran the GEMMs of the latest training session (gemmRunRecord in train/backend/kernels/native-gemm.ts: the
   * backend, the native runner and, with the per-shape probe, each shape class's choice and timings); rewritten at
   * each start.
   */
  gemm: 'gemm.json',
} as const;

/** Reads a run folder's config, of any task. */
export async function readRunConfig(runDir: string): Promise<RunConfig> {
  const path = join(runDir, RUN_FILES.config);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    throw new Error(`${runDir} is not a frost run folder (no ${RUN_FILES.config})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`${path}: not valid JSON (${(err as Error).message}); the run's config is damaged`, { cause: err });
  }
  const parsed = runConfigSchema.safeParse(json);
  if (!parsed.success) throw new Error(`${path}: invalid run config: ${describeIssues(parsed.error.issues)}`);
  return parsed.data;
}

export async function writeRunConfig(runDir: string, config: RunConfig): Promise<void> {
  // Atomic: a resume rewrites it with its budget, and a kill then must not leave the run without its config.
  await writeFileAtomic(join(runDir, RUN_FILES.config), `${JSON.stringify(config, null, 2)}\n`);
}

/** Narrows a run config to a task, with an error naming the run's task otherwise. */
export function expectTask<T extends TaskName>(
  config: RunConfig,
  task: T,
  where: string,
): Extract<RunConfig, { task: T }> {
  if (config.task !== task) throw new TypeError(`${where} needs a ${task} run, not a ${config.task} run`);
  return config as Extract<RunConfig, { task: T }>;
}
