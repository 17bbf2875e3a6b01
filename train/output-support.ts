import { FAIRSEQ_TOKENIZER } from '../core/subword/fairseq-tokenizer.ts';
import { MARIAN_TOKENIZER } from '../core/subword/marian-tokenizer.ts';
import { isSubwordKind } from '../core/subword/subword-spec.ts';
import { SPECIALS, type Vocabulary } from '../core/vocab.ts';
import type { ModelSizes } from '../models/archs/types.ts';
import type { OutputHead } from '../models/heads/types.ts';
import type { TranslationRunConfig } from './run-config.ts';

/**
 * The target ids a translation run's output layer never predicts (`ModelSizes.excludedTargets`): for subword
 * vocabularies, the pieces that never occur in the target side of the training text (for Multi30k de-en with a
 * joint 8,000-piece model, the 3,858 German-only pieces and unused bytes), `</s>` always kept. Training,
 * export and the report derive them from the saved target vocabulary's counts, so all three build the same model.
 *
 * An imported Marian vocabulary (train/import/marian.ts) says the same with its counts: 0 for the `<s>` row frost's
 * decoder starts from, which Marian never predicts; an imported fairseq vocabulary (train/import/fairseq.ts) likewise.
 *
 * None for word vocabularies (every word was kept for its count; `<unk>` stands for the rest), with
 * `vocab.maskUnseen` false, or with label smoothing, whose ε is spread over every entry of the vocabulary, unless
 * `vocab.smoothSeenOnly` spreads it over the pieces the targets use (the loss smooths over the logits it is given).
 */
export function excludedTargets(config: TranslationRunConfig, tgtVocab: Vocabulary): number[] {
  const counts = tgtVocab.frequencies;
  if (
    !(
      isSubwordKind(config.vocab.kind) ||
      config.vocab.kind === MARIAN_TOKENIZER ||
      config.vocab.kind === FAIRSEQ_TOKENIZER
    ) ||
    !config.vocab.maskUnseen ||
    (config.labelSmoothing > 0 && config.vocab.smoothSeenOnly !== true) ||
    counts === undefined
  ) {
    return [];
  }
  const out: number[] = [];
  for (const [id, count] of counts.entries()) if (count === 0 && id !== SPECIALS.eos.id) out.push(id);
  return out;
}

/**
 * The output layer's part of a translation run's `ModelSizes`: the excluded targets and whether the layer is
 * compact (`vocab.compactOutput`, false for runs whose config.json predates it). Training, export and the report
 * all build the model from this, so a run's checkpoints fit the model each of them builds.
 */
export function outputLayerSizes(
  config: TranslationRunConfig,
  tgtVocab: Vocabulary,
): Pick<ModelSizes, 'excludedTargets' | 'compactOutput'> {
  const excluded = excludedTargets(config, tgtVocab);
  return { excludedTargets: excluded, compactOutput: excluded.length > 0 && config.vocab.compactOutput === true };
}

/** The rows a model's output layer scores (K for a compact one, else |V|), saved in its checkpoints' state. */
export function outputRows(head: OutputHead, tgtVocab: number): number {
  return head.rowIds?.length ?? tgtVocab;
}

/**
 * Refuses a checkpoint trained with another output layer than the model built for it: a compact one (K rows)
 * against a masked one (|V|), after `vocab.compactOutput` was changed in config.json. Learned parameters would
 * not fit anyway, but a frozen head (fixed-l2, hadamard) has none in the checkpoint, and the model would load and
 * score against a matrix it was never trained with. Checkpoints from before compact layers say nothing: |V| rows.
 */
export function checkOutputRows(state: Record<string, unknown>, rows: number, tgtVocab: number, where: string): void {
  const saved = typeof state.outputRows === 'number' ? state.outputRows : tgtVocab;
  if (saved !== rows) {
    throw new Error(
      `checkpoint in ${where}: its output layer scores ${saved} of ${tgtVocab} targets, the run config builds one ` +
        `of ${rows} (config.json's vocab.compactOutput does not match the run that wrote it)`,
    );
  }
}
