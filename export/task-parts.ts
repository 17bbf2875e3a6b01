import { Registry } from '../core/registry.ts';
import type { ModelCardInput } from '../core/runtime/model-card.ts';
import type { ModelSizes } from '../models/index.ts';
import type { Pair } from '../train/data/corpus.ts';
import type { TaskName } from '../train/run-config.ts';
import type { LoadedCheckpoint, RunFolder } from '../train/run-folder.ts';
import type { ExportOptions } from './export-run.ts';
import type { ParityInputs, ParityReport } from './parity.ts';
import type { PrecisionCheck } from './precision-check.ts';

/** The checkpoint to export: one saved by the trainer, or the average of the last N epoch checkpoints. */
export interface ExportSource {
  checkpoint: LoadedCheckpoint;
  /** Its folder; for an average, the newest averaged one (errors about the averaged tensors name it). */
  dir: string;
  averaged?: { epoch: number; dir: string; sha256: string }[];
  /**
   * Whether these are the weights the run's best validation score was measured on (`best`, or a checkpoint at its
   * step): only then does the card claim that score.
   */
  validated: boolean;
}

/** A task's export, built and checked, before anything is written: export-run.ts writes it the same way for all. */
export interface BuiltExport<Card> {
  /** The graphs and the files beside them, by name, in the order they are written. */
  files: Record<string, Uint8Array>;
  /** The parsed card, written last: a folder without one holds no finished export. */
  card: Card;
  parity: ParityReport;
  /** Only for fp16/int8 exports. */
  precisionCheck?: PrecisionCheck;
  /** What the summary line says of the graphs: `N bytes of fp32 ONNX`. */
  describe: string;
  /** What it says after the parity (the fp16/int8 BLEU check). */
  note?: string;
  /** Runs once the card is written (a Triton repository). */
  finish?(): Promise<unknown>;
}

/** How one task exports a run: export-run.ts opens the run, loads the checkpoint and writes what `build` gives. */
export interface TaskExport<Card = unknown> {
  /** Refuses options the task cannot export with, before anything is read. */
  refuse?(opts: ExportOptions): void;
  /** The model rebuilt from `source`, its graphs checked against tfjs, and its card named `name`. */
  build(run: RunFolder, source: ExportSource, opts: ExportOptions, name: string): Promise<BuiltExport<Card>>;
}

/** What an encoder-decoder export needs from its task; seq2seq-export.ts does the rest the same way for both. */
export interface ExportParts {
  /** Sizes the model is rebuilt with. */
  sizes: ModelSizes;
  /** Opset of the encoder graph (a frozen encoder's, which it is merged with). @default 18 */
  encoderOpset?: number;
  /**
   * The final encoder graph from the model's, and its inputs (a frozen encoder merged in front of
   * the model's graph turns its `features` input into `pixels`). @default the model's graph as it is
   */
  finishEncoder?(bytes: Uint8Array): { bytes: Uint8Array; inputs: string[] };
  /** Inputs the parity check runs, `count` of them. */
  parityInputs(count: number, pad: number): Promise<ParityInputs>;
  /** The card's task-specific fields. */
  card: Pick<
    ModelCardInput,
    'task' | 'source' | 'target' | 'tokenizer' | 'image' | 'subword' | 'marian' | 'fairseq'
  > & {
    data: Record<string, unknown>;
    extra?: Record<string, unknown>;
  };
  /** Files written beside the graphs and listed in the card's `files` (subword models), by name. */
  files?: Record<string, Uint8Array>;
  /** Validation pairs for the fp16/int8 BLEU comparison (translation only; none: no BLEU recorded). */
  precisionPairs(max?: number): Promise<Pair[]>;
}

const taskExports = new Registry<TaskExport>('task export');

/** Adds the export side of a training task; each task's export file calls this once (task-exports.ts imports them). */
export function registerTaskExport<Card>(task: TaskName, taskExport: TaskExport<Card>): void {
  taskExports.register(task, taskExport);
}

/** The export of `task`'s runs; one that has none registered is refused, naming those that have. */
export function taskExport(task: TaskName): TaskExport {
  return taskExports.get(task);
}
