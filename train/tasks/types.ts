import type { InputKind, ModelBatch, ModelSizes, Seq2SeqModel } from '../../models/index.ts';
import type { HasParams, LoadedCheckpoint } from '../checkpoint.ts';
import type { Adam } from '../optim/adam.ts';
import type { RunConfig, TaskName } from '../run-config.ts';
import type { LoopState, LoopTask } from '../training-loop.ts';

/**
 * A kind of training run: what it reads, the model it builds, one update, its validation and its
 * metrics line. The trainer (train/trainer.ts) does the rest the same way for every task: the run
 * folder, the lock, the schedule, the optimiser and the epoch loop (train/training-loop.ts).
 */
export interface TrainingTask<Config extends RunConfig = RunConfig> {
  name: TaskName;
  /** Refuses an architecture that does not serve the task, before the run folder is made or data read. */
  checkArch(config: Config): void;
  /**
   * Reads the data and builds the vocabulary (or, when `start.resuming`, reloads the one in the run
   * folder: the ids a checkpoint was trained with must not change), logs its summary, builds the
   * model and says how the loop trains and validates it.
   */
  start(config: Config, start: TaskStart): Promise<TaskTraining>;
}

/** What the trainer hands a task as it starts or resumes a run. */
export interface TaskStart {
  runDir: string;
  /** The run folder holds the vocabulary already (a resume, or a restart after a stop before the first save). */
  resuming: boolean;
  /** The checkpoint a resume continues from; null for a new run. */
  checkpoint: LoadedCheckpoint | null;
  log(line: string): void;
}

/**
 * A task's part of one training session. `S` is the loop state with the task's best-so-far field,
 * `V` its validation, `M` its metrics.jsonl line and `R` what the task adds to the trainer's result.
 */
export interface TaskTraining<S extends LoopState = LoopState, V = unknown, M extends object = object, R = unknown> {
  model: HasParams;
  /** A new run's state beyond the loop's own (its best-so-far validation, ...); saved with every checkpoint. */
  newState: Omit<S, keyof LoopState>;
  /** The loop's task, updating the model with `optimizer`. */
  loop(optimizer: Adam): LoopTask<S, V, M>;
  /** The task's fields of the result (the model, its data, the best validation), from the final state. */
  result(state: S): R;
}

/** The batches of one epoch of a seq2seq task, in training order. */
export interface EpochBatches {
  readonly length: number;
  /** Batch i of the epoch (built on demand: images are normalised per batch). */
  batch(i: number): ModelBatch;
}

/** A seq2seq task's data, ready to train on: what its training needs and nothing task-specific. */
export interface TaskData {
  /** One line for the log: split sizes, vocabulary. */
  readonly summary: string;
  /** Vocabulary (and image input) sizes the model is built for. */
  readonly sizes: ModelSizes;
  /** The batches of `epoch` (0-based); deterministic for the run's seed and the epoch. */
  epoch(epoch: number): EpochBatches;
  /**
   * The validation score the schedule follows (BLEU, 0-100) with greedy decoding, alone or with more
   * scores for the log and metrics.jsonl.
   */
  validate(model: Seq2SeqModel): Promise<number | ValidationScores>;
}

/** A validation's BLEU and the other scores computed on the same output (chrF, chrF++ …). */
export interface ValidationScores {
  score: number;
  /** By name as printed, e.g. `{ chrF2: 51.2, 'chrF2++': 49.8 }`. */
  more: Record<string, number>;
}

/** A seq2seq task (translation, captioning): how its data is read and its validation scored. */
export interface Seq2SeqTaskSpec<Config extends RunConfig = RunConfig> {
  name: TaskName;
  /** What the task's models encode; an architecture of the other kind is refused. */
  inputKind: InputKind;
  /**
   * Reads the data and builds the vocabulary (or, when `resuming`, reloads the one in the run
   * folder: the ids a checkpoint was trained with must not change).
   */
  prepare(config: Config, runDir: string, resuming: boolean, log: (line: string) => void): Promise<TaskData>;
}
