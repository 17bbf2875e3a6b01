import { BeamSearch } from './beam-search.ts';
import { GreedySearch } from './greedy.ts';
import type { Search } from './search.ts';
import type { ResolvedSearchOptions } from './search-options.ts';

/**
 * The one place that chooses the search strategy: greedy for beam 1 with one hypothesis per input
 * (no beam bookkeeping), beam search otherwise. Both give the same hypotheses at beam 1.
 */
export function createSearch(batchSize: number, opts: ResolvedSearchOptions): Search {
  return opts.beam === 1 && opts.nBest === 1 ? new GreedySearch(batchSize, opts) : new BeamSearch(batchSize, opts);
}
