// tfjs-core's Node build registers no gradient functions and its ESM build cannot be imported by
// Node (directory imports); the union package's Node build registers them all on the same core.
import '@tensorflow/tfjs';
// Importing an architecture file registers it (and, through it, every output head).
import './archs/rnn-attn.ts';
import './archs/transformer.ts';
import './archs/show-tell.ts';
import './archs/show-attend-tell.ts';
import './archs/convs2s.ts';
import './archs/lightconv.ts';
import './archs/lstm-lm.ts';

export {
  archDefinition,
  archNames,
  buildLanguageModel,
  buildModel,
  getArch,
  getLmArch,
  resolveArchConfig,
} from './archs/registry.ts';
export type { ArchFamily } from './archs/registry.ts';
export type { LanguageModel, LmState, StreamWindow } from './archs/lm-types.ts';
export { getHeadDefinition, headIsFrozen, headNames, readTargetMatrix, resolveHeadOptions } from './heads/index.ts';
export type { TargetMatrix } from './heads/index.ts';
export type { TokenLossOptions } from './loss.ts';
export type {
  ArchRecipe,
  ArchTask,
  LmArchDefinition,
  EncoderInput,
  ImageBatch,
  ImageInputSpec,
  InputKind,
  ModelBatch,
  ModelSizes,
  NamedTensors,
  Seq2SeqBatch,
  Seq2SeqModel,
} from './archs/types.ts';
