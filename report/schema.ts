import { z } from 'zod';

/**
 * `report.json`: every number `report.md` and `report.html` show, and nothing they compute on their
 * own, so a reader (or a test) can check any cell against it. Values that can be undefined (a
 * correlation of constant norms, a run without a `learned` baseline) are null, never NaN, which
 * JSON cannot hold.
 */

const count = z.number().int().nonnegative();
const maybe = z.number().nullable();

/** Parameters by where they sit; the size bars stack these. */
export const componentParamsSchema = z.object({
  /** Learnable source and target embeddings (a tied head's matrix counts here: it is stored once). */
  embeddings: count,
  /** Learnable encoder parameters other than the embedding. */
  encoder: count,
  /** Learnable decoder parameters other than the embedding. */
  decoder: count,
  /** Learnable parameters of the output layer (W and b, a projection, a scale). */
  headLearnable: count,
  /** Frozen output-layer parameters stored in the ONNX file. */
  headFrozen: count,
  /** Frozen output-layer parameters the ONNX graph regenerates from a seed or structure (0 bytes). */
  headGenerated: count,
});
export type ComponentParams = z.infer<typeof componentParamsSchema>;
export const COMPONENT_KEYS = Object.keys(componentParamsSchema.shape) as (keyof ComponentParams)[];

export const onnxSizeSchema = z.object({
  /** encoder + decoder file bytes. */
  bytes: count,
  gzipBytes: count,
  /**
   * Median onnxruntime-node session creation of each graph, summed, in ms (all graph optimisations, as serving loads
   * them).
   */
  sessionCreateMs: z.number().nonnegative(),
});
export type OnnxSize = z.infer<typeof onnxSizeSchema>;

export const REPORT_PRECISIONS = ['fp32', 'fp16', 'int8'] as const;

export const latencySchema = z.object({
  beam: z.number().int().positive(),
  /** onnxruntime intra-op threads. */
  threads: z.number().int().nonnegative(),
  /** Median ms to translate one test sentence alone, over `batch1Sentences` sentences. */
  batch1Ms: z.number().nonnegative(),
  batch1Sentences: z.number().int().positive(),
  /** Median ms to translate a batch of `batch64Size` test sentences, over `batch64Batches` batches. */
  batch64Ms: z.number().nonnegative(),
  batch64Size: z.number().int().positive(),
  batch64Batches: z.number().int().positive(),
  /** The machine's 1-minute load average when the timing started: timings taken under load are slower. */
  loadAverage: z.number().nonnegative(),
  /**
   * When the timing started (ISO 8601). A grid reuses committed rows with the timing of the session that made them,
   * on that session's machine and load. Absent in older reports.
   */
  timedAt: z.string().optional(),
});
export type Latency = z.infer<typeof latencySchema>;

export const testResultSchema = z.object({
  /** The split decoded ('test': Multi30k's test2016, or a plain corpus's test files). */
  split: z.string(),
  sentences: count,
  beam: z.number().int().positive(),
  /** Corpus BLEU of detokenised output against the raw references, lower-cased (sacreBLEU 13a). */
  bleu: z.number(),
  bleuSignature: z.string(),
  /** The same, cased (sacreBLEU's default): the headline figure for models that keep case (subword runs). */
  bleuCased: z.number().optional(),
  bleuCasedSignature: z.string().optional(),
  /**
   * chrF (β 2, character order 6) and chrF++ (word order 2) of the same output, lower-cased (sacreBLEU); absent in
   * reports made before frost computed them.
   */
  chrf: z.number().optional(),
  chrfpp: z.number().optional(),
  /** sacreBLEU's chrF++ signature, e.g. `nrefs:1|case:lc|eff:yes|nc:6|nw:2|space:no|version:2.6.0`. */
  chrfSignature: z.string().optional(),
  /** Distinct target words produced (specials and <unk> excluded). */
  vocabUsage: count,
  /** Distinct words of the references, tokenised as in training: the usage a perfect output would have. */
  refVocabUsage: count,
  /** Share of produced words that occur fewer than `rareThreshold` times in the training targets. */
  rareRate: maybe,
  refRareRate: maybe,
  words: count,
  /**
   * Subword runs: the figures above count words of the detokenised text (13a); these count pieces, with the
   * pieces' training counts.
   */
  pieces: z
    .object({ vocabUsage: count, refVocabUsage: count, rareRate: maybe, refRareRate: maybe, words: count })
    .optional(),
});
export type TestResult = z.infer<typeof testResultSchema>;

const wordPairSchema = z.object({
  a: z.string(),
  b: z.string(),
  /** Whether the words are related (dog/puppy) or a control pair (dog/shirt). */
  related: z.boolean(),
  /** cos(w_a, w_b); null when a word is not in the target vocabulary. */
  cosine: maybe,
});

export const matrixAnalysisSchema = z.object({
  /** Whether the target vectors were learned (learned, tied, shared-*) or frozen (fixed-*, hadamard). */
  kind: z.enum(['learned', 'frozen']),
  /** Which matrix was read, in words. */
  description: z.string(),
  /** Words correlated (the vocabulary without specials). */
  words: count,
  dim: z.number().int().positive(),
  /** Spearman ρ of ‖w_j‖ and word j's training frequency; null when the norms are all equal. */
  spearman: maybe,
  /** A frequency-stratified sample of (frequency, norm) for the scatter plot. */
  points: z.array(z.object({ freq: count, norm: z.number() })),
  pairs: z.array(wordPairSchema),
});
export type MatrixAnalysis = z.infer<typeof matrixAnalysisSchema>;

/**
 * Why training stopped, as the trainer records it: 'plateau' is the stopping rule (converged by it), 'epochs' an epoch
 * cap, 'time' a time budget, 'updates' an update budget; 'imported' a model trained elsewhere (`frost import`), whose
 * convergence frost cannot judge.
 */
export const stopKindSchema = z.enum(['plateau', 'epochs', 'time', 'updates', 'imported']);
export type StopKind = z.infer<typeof stopKindSchema>;

/** One system's test BLEU over the bootstrap's resamples: its 95% interval. */
const resampledBleuSchema = z.object({ lo: z.number(), hi: z.number() });

/**
 * A run's test BLEU against its baseline's, resampled: the paired bootstrap of sacreBLEU's `--paired-bs`
 * (core/metrics/paired-bootstrap.ts) over both runs' lower-cased test BLEU statistics, sentence by sentence, as
 * `bleuDelta` compares them.
 */
export const bleuIntervalSchema = z.object({
  /** The 95% interval of run − baseline: the 2.5th and 97.5th percentiles of the resampled differences. */
  lo: z.number(),
  hi: z.number(),
  /** sacreBLEU's paired-bootstrap p-value (at least 1 / (resamples + 1)). */
  p: z.number(),
  /** Each one's own 95% interval over the same resamples. */
  run: resampledBleuSchema,
  baseline: resampledBleuSchema,
  resamples: z.number().int().positive(),
  /** The seed of frost's generator (core/random.ts) that drew the resampled sentences. */
  seed: count,
  /**
   * The baseline's checkpoint (SHA-256) it was computed against: a grid that reuses this row keeps the interval only
   * beside that same baseline.
   */
  baselineCheckpoint: z.string(),
});
export type BleuInterval = z.infer<typeof bleuIntervalSchema>;

export const runReportSchema = z.object({
  /** The run folder's name ('de-en-learned'). */
  id: z.string(),
  runDir: z.string(),
  modelDir: z.string(),
  arch: z.string(),
  preset: z.string(),
  head: z.string(),
  src: z.string(),
  tgt: z.string(),
  seed: z.number().int(),
  training: z.object({
    epochs: count,
    steps: count,
    minutes: z.number().nonnegative(),
    budgetMinutes: z.number().nullable(),
    bestValBleu: maybe,
    stopReason: z.string().nullable(),
    /** Why training stopped (`stopKindSchema`); null while unfinished. Absent in reports from before it was kept. */
    stopKind: stopKindSchema.nullable().optional(),
    /** The run's schedule and stopping rule in words (report/stopping-rule.ts). Absent in older reports. */
    stoppingRule: z.string().optional(),
    /** The run's epoch cap (`frost train --epochs`) and update budget (`--max-updates`); absent in older reports. */
    budgetEpochs: count.nullable().optional(),
    budgetUpdates: count.nullable().optional(),
    /**
     * The extra `frost train` flags an experiment grid gave the run (`--train-flags`; empty: none), by which a
     * committed row is told from a run trained otherwise. Absent where no grid recorded them.
     */
    trainFlags: z.array(z.string()).optional(),
    /**
     * Validation BLEU (greedy, lower-cased) after each epoch, from metrics.jsonl: the learning curve
     * (report/convergence.ts). Absent in older reports.
     */
    valBleuCurve: z.array(z.object({ epoch: count, step: count, bleu: z.number() })).optional(),
    /**
     * Best validation BLEU of the last 5 epochs minus the best before them (report/convergence.ts); null with
     * fewer than 6 validated epochs, absent in older reports.
     */
    lastGain: maybe.optional(),
  }),
  checkpoint: z.object({ which: z.enum(['best', 'last']), sha256: z.string(), step: count, epoch: count }),
  params: z.object({ learnable: count, frozen: count, generated: count, components: componentParamsSchema }),
  /** The `learned` run of the same arch, preset and language pair, if the report has one. */
  baseline: z.string().nullable(),
  /** (baseline learnable − learnable) / baseline learnable: the paper's Table 3 "decrease". */
  learnableDecrease: maybe,
  /** Test BLEU minus the baseline's. */
  bleuDelta: maybe,
  /**
   * `bleuDelta`'s paired bootstrap (`bleuIntervalSchema`). Null where there is none: no baseline, the baseline
   * itself, or a run or baseline whose test translations the report did not have (a row taken from a committed
   * report, against a baseline other than the one it was computed with). Absent in reports from before intervals.
   */
  bleuDeltaInterval: bleuIntervalSchema.nullable().optional(),
  onnx: z.object({ fp32: onnxSizeSchema, fp16: onnxSizeSchema, int8: onnxSizeSchema }),
  latency: latencySchema,
  test: testResultSchema,
  /** Null for heads whose output matrix the report cannot read (see `matrixNote`). */
  matrix: matrixAnalysisSchema.nullable(),
  matrixNote: z.string().optional(),
});
export type RunReport = z.infer<typeof runReportSchema>;

/** The machine a report was measured on (translation and language-model reports alike). */
export const machineSchema = z.object({
  cpu: z.string(),
  cores: z.number().int().positive(),
  node: z.string(),
  onnxruntime: z.string(),
});

export const reportSchema = z.object({
  format: z.literal('frost-report'),
  version: z.literal(1),
  title: z.string(),
  created: z.string(),
  machine: machineSchema,
  settings: z.object({ beam: z.number().int().positive(), rareThreshold: count }),
  runs: z.array(runReportSchema),
});
export type Report = z.infer<typeof reportSchema>;

export const REPORT_FILES = {
  json: 'report.json',
  markdown: 'report.md',
  html: 'report.html',
  charts: 'charts',
} as const;
