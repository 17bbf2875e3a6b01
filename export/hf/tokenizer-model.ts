/**
 * The `model` block of `tokenizer.json` for a frost subword model: Hugging Face tokenizers' `BPE` or `Unigram`,
 * with byte fallback, over frost's piece list in frost's id order.
 *
 * - BPE: SentencePiece merges the adjacent pair whose concatenation is the highest-scoring piece (leftmost on
 *   ties); tokenizers merges the pair of lowest rank. So every way of writing a piece as two pieces is a merge,
 *   ranked by the merged piece's score (highest first), which picks the same merge.
 * - Unigram: the pieces and their scores; tokenizers scores a character that is no piece at the lowest score
 *   minus 10, SentencePiece's unknown penalty, taken over all pieces. frost takes it over the normal pieces, so
 *   the specials' and byte pieces' scores are written as that lowest normal score (they are never matched in
 *   frost, and no lower than the rest in tokenizers).
 */
import type { SubwordModel } from '../../core/subword/subword-model.ts';
import { PieceType } from '../../core/subword/sentencepiece-proto.ts';
import { SPECIALS } from '../../core/vocab.ts';

/** Every (left, right) pair of normal pieces that concatenate to a normal piece, in merge order. */
export function bpeMerges(model: SubwordModel): Array<[string, string]> {
  const normal = new Map<string, number>();
  model.pieces.forEach((p, id) => {
    if (p.type === PieceType.NORMAL) normal.set(p.piece, id);
  });
  const byScore = [...normal.entries()].sort(
    ([, a], [, b]) => model.pieces[b]!.score - model.pieces[a]!.score || a - b,
  );
  const merges: Array<[string, string]> = [];
  for (const [piece] of byScore) {
    const chars = Array.from(piece);
    for (let cut = 1; cut < chars.length; cut++) {
      const left = chars.slice(0, cut).join('');
      const right = chars.slice(cut).join('');
      if (normal.has(left) && normal.has(right)) merges.push([left, right]);
    }
  }
  return merges;
}

export function tokenizerModel(model: SubwordModel): Record<string, unknown> {
  if (model.kind === 'bpe') {
    return {
      type: 'BPE',
      dropout: null,
      unk_token: SPECIALS.unk.token,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: true,
      byte_fallback: true,
      ignore_merges: false,
      vocab: Object.fromEntries(model.tokens.map((t, id) => [t, id])),
      merges: bpeMerges(model),
    };
  }
  const normalScores = model.pieces.filter((p) => p.type === PieceType.NORMAL).map((p) => p.score);
  const lowest = Math.min(...normalScores);
  return {
    type: 'Unigram',
    unk_id: SPECIALS.unk.id,
    byte_fallback: true,
    vocab: model.pieces.map((p) => [p.piece, p.type === PieceType.NORMAL ? p.score : lowest]),
  };
}
