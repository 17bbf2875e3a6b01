/**
 * Series colours: the Okabe-Ito palette, which stays distinguishable for the common forms of
 * colour blindness; black is left out because axes and text use it.
 */
const PALETTE = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#F0E442', '#999999'] as const;

export function seriesColor(index: number): string {
  return PALETTE[index % PALETTE.length]!;
}
