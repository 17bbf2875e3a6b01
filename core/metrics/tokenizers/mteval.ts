/**
 * sacreBLEU's language-independent tokenisers (sacrebleu/tokenizers/tokenizer_13a.py, tokenizer_re.py,
 * tokenizer_intl.py, tokenizer_char.py), ported rule for rule.
 *
 * Isomorphic: no Node APIs.
 */
import { pySplit } from '../python-text.ts';

// Porting note: tokenizer_re.py's regexes, in order. Python's [0-9] and [^0-9] are ASCII here too.
const RE_13A_SYMBOLS = /([{-~[-` -&(-+:-@/])/gu;
const RE_13A_PERIOD_COMMA_AFTER_NON_DIGIT = /([^0-9])([.,])/gu;
const RE_13A_PERIOD_COMMA_BEFORE_NON_DIGIT = /([.,])([^0-9])/gu;
const RE_13A_DASH_AFTER_DIGIT = /([0-9])(-)/gu;

/** sacreBLEU's `TokenizerRegexp`: the rules 13a and zh share, then whitespace normalised. */
export function tokenizeRegexp(line: string): string {
  let s = line.replace(RE_13A_SYMBOLS, ' $1 ');
  s = s.replace(RE_13A_PERIOD_COMMA_AFTER_NON_DIGIT, '$1 $2 ');
  s = s.replace(RE_13A_PERIOD_COMMA_BEFORE_NON_DIGIT, ' $1 $2');
  s = s.replace(RE_13A_DASH_AFTER_DIGIT, '$1 $2 ');
  return pySplit(s).join(' ');
}

/** sacreBLEU's `13a` tokeniser: mteval-v13a.pl's, the WMT default. */
export function tokenize13a(line: string): string {
  let s = line.replaceAll('<skipped>', '').replaceAll('-\n', '').replaceAll('\n', ' ');
  if (s.includes('&')) {
    s = s.replaceAll('&quot;', '"').replaceAll('&amp;', '&').replaceAll('&lt;', '<').replaceAll('&gt;', '>');
  }
  return tokenizeRegexp(` ${s} `);
}

const RE_INTL_PUNCT_AFTER_NON_NUMBER = /(\P{N})(\p{P})/gu;
const RE_INTL_PUNCT_BEFORE_NON_NUMBER = /(\p{P})(\P{N})/gu;
const RE_INTL_SYMBOL = /(\p{S})/gu;

/**
 * sacreBLEU's `intl` tokeniser (mteval-v14.pl's international tokenisation): splits Unicode
 * punctuation unless between digits, and every symbol.
 *
 * Porting note: like the original, a number followed by a final period keeps the period ("2007.").
 * Unicode categories come from the JS engine's Unicode version, Python's `regex` may be a version newer.
 */
export function tokenizeIntl(line: string): string {
  let s = line.replace(RE_INTL_PUNCT_AFTER_NON_NUMBER, '$1 $2 ');
  s = s.replace(RE_INTL_PUNCT_BEFORE_NON_NUMBER, ' $1 $2');
  s = s.replace(RE_INTL_SYMBOL, ' $1 ');
  return pySplit(s).join(' ');
}

/** sacreBLEU's `char` tokeniser: every code point is a token. */
export function tokenizeChar(line: string): string {
  return Array.from(line).join(' ');
}
