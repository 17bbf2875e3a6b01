import type { ModelCardInput } from '../core/runtime/model-card.ts';
import type { ModelSizes } from '../models/index.ts';
import type { Pair } from '../train/data/corpus.ts';
import type { TaskName } from '../train/run-config.ts';
import type { RunFolder } from '../train/run-folder.ts';
import { captionExportParts } from './caption-parts.ts';
import type { ParityInputs } from './parity.ts';
import { translationExportParts } from './translation-parts.ts';

/** What exporting a run needs from its task; export-run.ts does the rest the same way for every task. */
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
  card: Pick<ModelCardInput, 'task' | 'source' | 'target' | 'tokenizer' | 'image' | 'subword'> & {
    data: Record<string, unknown>;
    extra?: Record<string, unknown>;
  };
  /** Files written beside the graphs and listed in the card's `files` (subword models), by name. */
  files?: Record<string, Uint8Array>;
  /** Validation pairs for the fp16/int8 BLEU comparison (translation only; none: no BLEU recorded). */
  precisionPairs(max?: number): Promise<Pair[]>;
}

/** The export side of each training task. */
const EXPORT_PARTS: Readonly<Record<TaskName, (run: never) => Promise<ExportParts>>> = {
  translation: translationExportParts,
  caption: captionExportParts,
  // Language models have no encoder: export-run.ts hands them to export/lm-export.ts before this table.
  lm: () => Promise.reject(new Error('a language-model run is exported by export/lm-export.ts')),
};

export function exportParts(run: RunFolder): Promise<ExportParts> {
  return (EXPORT_PARTS[run.config.task] as (run: RunFolder) => Promise<ExportParts>)(run);
}
