/**
 * The paper's schedule: when validation BLEU has not improved for `patience` epochs, multiply the
 * learning rate by `decay`; stop after `stopAfter` epochs without improvement.
 */
export interface PlateauOptions {
  /** @default 8 */
  patience?: number;
  /** @default 0.8 */
  decay?: number;
  /** @default 20 */
  stopAfter?: number;
}

export interface PlateauState {
  best: number;
  bestEpoch: number;
  sinceBest: number;
  sinceDecay: number;
}

export class PlateauSchedule {
  readonly patience: number;
  readonly decay: number;
  readonly stopAfter: number;
  state: PlateauState = { best: -Infinity, bestEpoch: -1, sinceBest: 0, sinceDecay: 0 };

  constructor(opts: PlateauOptions = {}) {
    this.patience = opts.patience ?? 8;
    this.decay = opts.decay ?? 0.8;
    this.stopAfter = opts.stopAfter ?? 20;
  }

  /**
   * Records an epoch's validation score; says whether it is the best yet, the new learning-rate factor, and whether to
   * stop.
   */
  observe(score: number, epoch: number): { improved: boolean; lrFactor: number; stop: boolean } {
    const s = this.state;
    if (score > s.best) {
      s.best = score;
      s.bestEpoch = epoch;
      s.sinceBest = 0;
      s.sinceDecay = 0;
      return { improved: true, lrFactor: 1, stop: false };
    }
    s.sinceBest += 1;
    s.sinceDecay += 1;
    let lrFactor = 1;
    if (s.sinceDecay >= this.patience) {
      lrFactor = this.decay;
      s.sinceDecay = 0;
    }
    return { improved: false, lrFactor, stop: s.sinceBest >= this.stopAfter };
  }
}
