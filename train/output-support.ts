import { isSubwordKind } from '../core/subword/subword-spec.ts';
import { SPECIALS, type Vocabulary } from '../core/vocab.ts';
import type { ModelSizes } from '../models/archs/types.ts';
import type { TranslationRunConfig } from './run-config.ts';

/**
 * The target ids a translation run's output layer never predicts (`ModelSizes.excludedTargets`): for subword
 * vocabularies, the pieces that never occur in the target side of the training text (for Multi30k de-en with a
 * joint 8,000-piece model, the 3,730 German-only pieces and unused bytes), `</s>` always kept. Training,
 * export and the report derive them from the saved target vocabulary's counts, so all three build the same model.
 *
 * None for word vocabularies (every word was kept for its count; `<unk>` stands for the rest), with
 * `vocab.maskUnseen` false, or with label smoothing, whose ε is spread over every entry of the vocabulary.
 */
export function excludedTargets(config: TranslationRunConfig, tgtVocab: Vocabulary): number[] {
  const counts = tgtVocab.frequencies;
  if (
    !isSubwordKind(config.vocab.kind) ||
    !config.vocab.maskUnseen ||
    config.labelSmoothing > 0 ||
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
