import type { RecipeFlags } from '../../../../train/recipe.ts';
import type { RunConfig, TaskName } from '../../../../train/run-config.ts';

/** `frost train` flags that make a new run's config (see ../train.ts for their help). */
export interface NewRunFlags extends RecipeFlags {
  task: TaskName;
  arch?: string;
  head: string;
  /** Required but for --task lm, whose default corpus is Multi30k English + Flickr8k captions. */
  data?: string;
  src?: string;
  tgt?: string;
  preset: string;
  set: Record<string, unknown>;
  headOption: Record<string, unknown>;
  epochs?: number;
  maxMinutes?: number;
  maxUpdates?: number;
  /** Minutes between saves of `last` inside an epoch. */
  checkpointMinutes?: number;
  seed: number;
  batchSize?: number;
  minFreq?: number;
  /** 'word' (default), 'bpe' or 'unigram'. */
  vocab?: string;
  /** word: cap on the vocabulary; bpe, unigram: pieces per model. */
  vocabSize?: number;
  jointVocab?: boolean;
  /** bpe, unigram: keep pieces the training targets never use in the output softmax (excluded by default). */
  keepUnseenOutputs?: boolean;
  smoothSeenOnly?: boolean;
  valSentences?: number;
  encoder?: string;
  encoderOutput?: string;
  imageSize?: number;
  imageCache?: string;
  /** lm: tokens per truncated-BPTT window. */
  bptt?: number;
  /** lm, one-file corpora: "valid,test" fractions. */
  split?: string;
}

/** What the new run's config is built from besides the flags. */
export interface ConfigContext {
  arch: string;
  runDir: string;
  subword: boolean;
  /** The `vocab` field for a word minimum frequency (the task's default when undefined). */
  vocab(minFreq: number | undefined): Record<string, unknown>;
}

/** How `frost train` makes a task's new run: its default architecture and corpus, and its config from the flags. */
export interface NewRunTask {
  task: TaskName;
  /** The architecture the task trains unless told otherwise. */
  defaultArch: string;
  /** The task trains on a default corpus when `--data` is not given. @default false */
  defaultData?: boolean;
  /** Its subword vocabulary may be one for both sides (`--joint-vocab`); other tasks refuse the flag. @default false */
  jointVocabulary?: boolean;
  /**
   * A new run's output layer scores only the subword pieces its targets use (`compactOutput`), unless
   * `--keep-unseen-outputs`; `--smooth-seen-only` smooths over those pieces. Other tasks refuse both flags.
   * @default false
   */
  compactOutput?: boolean;
  /** The run's config from the flags (the checks common to all tasks done). */
  runConfig(flags: NewRunFlags, context: ConfigContext): Promise<RunConfig> | RunConfig;
}
