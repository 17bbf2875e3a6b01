/**
 * Targets and padding for `rows` rows of a loss over `vocab` classes, as the loss tests use them: row i's
 * target is 7i mod vocab (spread over the classes), and every third row (i ≡ 2 mod 3) is padding (mask 0).
 */
export function lossRows(rows: number, vocab: number): { targets: number[]; mask: number[] } {
  return {
    targets: Array.from({ length: rows }, (_, i) => (i * 7) % vocab),
    mask: Array.from({ length: rows }, (_, i) => (i % 3 === 2 ? 0 : 1)),
  };
}
