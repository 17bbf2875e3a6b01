// Importing a head file registers it; this list is the only place that names them all.
import './learned.ts';
import './tied.ts';
import './fixed-uniform.ts';
import './fixed-l2.ts';
import './hadamard.ts';
import './shared-l2.ts';
import './shared-sqnorm.ts';
import './shared-distance.ts';
import './shared-cosine.ts';
import './drill.ts';

export {
  buildHead,
  getHeadDefinition,
  headIsFrozen,
  headNames,
  readTargetMatrix,
  resolveHeadOptions,
} from './registry.ts';
export type { TargetMatrix } from './target-matrix.ts';
export type { HeadContext, HeadDefinition, HeadOnnxContext, OutputHead } from './types.ts';
