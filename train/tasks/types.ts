import type { InputKind, ModelBatch, ModelSizes, Seq2SeqModel } from '../../models/index.ts';
import type { RunConfig, TaskName } from '../run-config.ts';

/** The batches of one epoch, in training order. */
export interface EpochPlan {
  readonly length: number;
  /** Batch i of the epoch (built on demand: images are normalised per batch). */
  batch(i: number): ModelBatch;
}

/** A task's data, ready to train on: what the trainer needs and nothing task-specific. */
export interface TaskData {
  /** One line for the log: split sizes, vocabulary. */
  readonly summary: string;
  /** Vocabulary (and image input) sizes the model is built for. */
  readonly sizes: ModelSizes;
  /** The batches of `epoch` (0-based); deterministic for the run's seed and the epoch. */
  epoch(epoch: number): EpochPlan;
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

/** A kind of training run: how its data is read and its validation scored. */
export interface TrainingTask<Config extends RunConfig = RunConfig> {
  name: TaskName;
  /** What the task's models encode; an architecture of the other kind is refused. */
  inputKind: InputKind;
  /**
   * Reads the data and builds the vocabulary (or, when `resuming`, reloads the one in the run
   * folder: the ids a checkpoint was trained with must not change).
   */
  prepare(config: Config, runDir: string, resuming: boolean, log: (line: string) => void): Promise<TaskData>;
}
