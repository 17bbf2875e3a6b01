// Each layout registers itself on import.
import './table2-rnn-attn.ts';
import './table3-transformer.ts';

export { paperTables, registerPaperLayout, type PaperLayout } from './registry.ts';
export { PAPER_RESULTS, SHORT_RUN_SPEARMAN } from './results.ts';
export { paperBleu, paperHeadOf } from './table2-rnn-attn.ts';
