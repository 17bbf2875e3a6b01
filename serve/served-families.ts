// Importing a family's serve-side file registers it; this list is the only place that names them all.
import './seq2seq-family.ts';
import './lm-family.ts';

export { batchHandler, loadInProcess, servedFamily, servedFamilyNames } from './served-family.ts';
export type { DecodeThreadScope, ServedFamily } from './served-family.ts';
