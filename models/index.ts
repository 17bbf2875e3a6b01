// tfjs-core's Node build registers no gradient functions and its ESM build cannot be imported by
// Node (directory imports); the union package's Node build registers them all on the same core.
import '@tensorflow/tfjs';
// Importing an architecture file registers it (and, through it, every output head).
import './archs/rnn-attn.ts';

export { archNames, buildModel, getArch, resolveArchConfig } from './archs/registry.ts';
export { headNames, getHeadDefinition } from './heads/index.ts';
export type { Seq2SeqBatch, Seq2SeqModel, NamedTensors } from './archs/types.ts';
