import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FAIRSEQ_BOS, loadFairseqTokenizer, SubwordNmtCodes, tokenizeLine } from '../core/subword/fairseq-tokenizer.ts';

/**
 * The `fairseq` tokeniser of imported fairseq models (core/subword/fairseq-tokenizer.ts): fairseq's tokenize_line,
 * subword-nmt's apply_bpe (codes versions 0.1 and 0.2), `</s>` after the source, and fairseq's post-processing.
 * test/import-fairseq.test.ts runs the `none` kind end to end against a PyTorch reference.
 */
const CODES = '#version: 0.2\ne r\nt h\nth e</w>\n';
const bytes = (s: string) => new TextEncoder().encode(s);

describe('fairseq tokeniser', () => {
  test('tokenize_line: whitespace runs are one space, the ends stripped', () => {
    assert.deepEqual(tokenizeLine('  ein\t Hund \n'), ['ein', 'Hund']);
    assert.deepEqual(tokenizeLine('   '), []);
  });

  test("subword-nmt 0.2: merges by rank, the end-of-word mark on the last character, '@@' inside words", () => {
    const codes = SubwordNmtCodes.parse(CODES, 'codes');
    // the: t h e</w> → th e</w> → the</w>. there: t h e r e</w> → t h er e</w> → th er e</w> (no more pairs).
    assert.deepEqual(codes.segment('the there  a'), ['the', 'th@@', 'er@@', 'e', 'a']);
  });

  test('subword-nmt 0.1 (no header): the end-of-word mark is a symbol of its own', () => {
    const codes = SubwordNmtCodes.parse('t h\nth e\nthe </w>\n', 'codes');
    assert.deepEqual(codes.segment('the then'), ['the', 'the@@', 'n']);
    assert.throws(() => SubwordNmtCodes.parse('#version: 0.2\na b c\n', 'codes'), /line 2 is not a pair/);
  });

  test("the tokeniser: </s> after the source only; detokenising undoes '@@ ' and drops </s> and fairseq's <s>", async () => {
    const tok = await loadFairseqTokenizer({ bpe: 'subword_nmt', file: 'bpecodes', source: 'de' }, async () =>
      bytes(CODES),
    );
    assert.deepEqual(tok.tokenize('the there', 'de'), ['the', 'th@@', 'er@@', 'e', '</s>']);
    assert.deepEqual(tok.tokenize('the there', 'en'), ['the', 'th@@', 'er@@', 'e']);
    assert.equal(tok.detokenize(['the', 'th@@', 'er@@', 'e', FAIRSEQ_BOS, '</s>'], 'en'), 'the there');
    const words = await loadFairseqTokenizer({ bpe: 'none', source: 'de' }, undefined);
    assert.deepEqual(words.tokenize(' zwei  Hunde ', 'de'), ['zwei', 'Hunde', '</s>']);
    assert.equal(words.detokenize(['two', 'dogs', '</s>'], 'en'), 'two dogs');
  });
});
