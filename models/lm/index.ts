// tfjs-core's Node build registers no gradients; the union package's does (as models/index.ts).
import '@tensorflow/tfjs';
// Importing an architecture file registers it (and, through it, every output head).
import './lstm-lm.ts';

export { buildLanguageModel, getLmArch, lmArchNames, resolveLmArchConfig } from './registry.ts';
export type { LanguageModel, LmArchDefinition, LmState, StreamWindow } from './types.ts';
