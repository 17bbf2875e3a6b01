import type { TranslationRunConfig } from '../train/run-config.ts';
import type { CheckpointInfo, RunFolder } from '../train/run-folder.ts';
import type { Vocabulary } from '../core/vocab.ts';
import { readTargetMatrix } from '../models/index.ts';
import type { ParamStore } from '../models/params.ts';
import { analyseMatrix } from './analyse-matrix.ts';
import type { ComponentParams, MatrixAnalysis } from './schema.ts';
import { wordPairs } from './word-pairs.ts';
import { outputLayerSizes } from '../train/output-support.ts';

/** What the report reads from the trained model itself rather than from its export. */
export interface ModelFindings {
  components: ComponentParams;
  matrix: MatrixAnalysis | null;
  matrixNote?: string;
}

/**
 * Parameters by component, from the store's names (`encoder/...`, `decoder/...`, `head/...`,
 * `.../embedding`). `generated` (the card's count of frozen parameters the graph regenerates) splits
 * the frozen head parameters into stored and generated.
 * @throws Error naming a parameter that fits no component, rather than counting it somewhere wrong
 */
function componentParams(params: ParamStore, generated: number): ComponentParams {
  const out: ComponentParams = {
    embeddings: 0,
    encoder: 0,
    decoder: 0,
    headLearnable: 0,
    headFrozen: 0,
    headGenerated: 0,
  };
  for (const [name, v] of params.learnable) {
    const parts = name.split('/');
    if (parts[parts.length - 1] === 'embedding') out.embeddings += v.size;
    else if (parts[0] === 'head') out.headLearnable += v.size;
    else if (parts[0] === 'encoder') out.encoder += v.size;
    else if (parts[0] === 'decoder') out.decoder += v.size;
    else
      throw new Error(
        `report: learnable parameter '${name}' belongs to no component (encoder/, decoder/, head/, */embedding)`,
      );
  }
  let frozen = 0;
  for (const [name, t] of params.frozen) {
    if (!name.startsWith('head/'))
      throw new Error(`report: frozen parameter '${name}' is outside the output layer; the size bars cannot place it`);
    frozen += t.size;
  }
  out.headGenerated = Math.min(generated, frozen);
  out.headFrozen = frozen - out.headGenerated;
  return out;
}

/**
 * Rebuilds the run's model from its config and checkpoint (frozen heads regenerate their matrices
 * from the seed, exactly as in training) and reads its parameter layout and target vectors.
 */
export async function inspectTrainedModel(
  run: RunFolder<TranslationRunConfig>,
  checkpoint: CheckpointInfo,
  vocabs: { src: Vocabulary; tgt: Vocabulary },
  generated: number,
): Promise<ModelFindings> {
  const { config } = run;
  const loaded = await run.loadCheckpoint(checkpoint.dir);
  const sizes = {
    srcVocab: vocabs.src.size,
    tgtVocab: vocabs.tgt.size,
    ...outputLayerSizes(config, vocabs.tgt),
  };
  const model = run.rebuildModel(sizes, loaded, checkpoint.dir);
  try {
    const components = componentParams(model.params, generated);
    const target = readTargetMatrix(config.head.name, model.params, model.head.rowIds);
    if (!target)
      return {
        components,
        matrix: null,
        matrixNote: `head '${config.head.name}' has no target matrix to read (its definition in models/heads/ gives none)`,
      };
    return { components, matrix: analyseMatrix(target, vocabs.tgt, wordPairs(config.data.tgt)) };
  } finally {
    model.params.dispose();
  }
}
