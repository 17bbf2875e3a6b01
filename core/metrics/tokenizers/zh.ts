/**
 * sacreBLEU's `zh` tokeniser (sacrebleu/tokenizers/tokenizer_zh.py, by Shujian Huang): every Chinese
 * character becomes a token of its own, and the rest is split with the 13a rules (without 13a's
 * `<skipped>` and entity handling).
 *
 * Isomorphic: no Node APIs.
 */
import { pyStrip } from '../python-text.ts';
import { tokenizeRegexp } from './mteval.ts';

/**
 * The code point ranges tokenizer_zh.py treats as Chinese, inclusive.
 *
 * Porting note: the reference writes its astral ranges as `u'\u20000'` and `u'\u2f800'`, which Python
 * reads as two characters each (`\u2000` followed by `0`). Its string comparison `start <= ch <= end`
 * then holds for U+2001..U+2A6D and U+2F81..U+2FA1, not for the CJK Extension B block: general
 * punctuation (– — “ ” …), arrows and mathematical symbols are split off as "Chinese", and no
 * character outside the Basic Multilingual Plane is. We keep exactly those ranges.
 */
const ZH_RANGES: readonly (readonly [number, number])[] = [
  [0x3400, 0x4db5], // CJK Unified Ideographs Extension A
  [0x4e00, 0x9fa5], // CJK Unified Ideographs
  [0x9fa6, 0x9fbb],
  [0xf900, 0xfa2d], // CJK Compatibility Ideographs
  [0xfa30, 0xfa6a],
  [0xfa70, 0xfad9],
  [0x2001, 0x2a6d], // written u'\u20000'..u'\u2a6d6' (see the porting note)
  [0x2f81, 0x2fa1], // written u'\u2f800'..u'\u2fa1d'
  [0xff00, 0xffef], // full-width ASCII and punctuation
  [0x2e80, 0x2eff], // CJK Radicals Supplement
  [0x3000, 0x303f], // CJK punctuation
  [0x31c0, 0x31ef], // CJK strokes
  [0x2f00, 0x2fdf], // Kangxi Radicals
  [0x2ff0, 0x2fff], // ideographic description characters
  [0x3100, 0x312f], // Bopomofo
  [0x31a0, 0x31bf], // Bopomofo extended
  [0xfe10, 0xfe1f],
  [0xfe30, 0xfe4f],
  [0x2600, 0x26ff],
  [0x2700, 0x27bf],
  [0x3200, 0x32ff],
  [0x3300, 0x33ff],
];

/** Whether tokenizer_zh.py's `_is_chinese_char` holds for one code point. */
function isChineseChar(char: string): boolean {
  const cp = char.codePointAt(0)!;
  if (cp > 0xffff) return false;
  return ZH_RANGES.some(([start, end]) => start <= cp && cp <= end);
}

/** sacreBLEU's `zh` tokeniser. */
export function tokenizeZh(line: string): string {
  let spaced = '';
  for (const char of pyStrip(line)) spaced += isChineseChar(char) ? ` ${char} ` : char;
  return tokenizeRegexp(spaced);
}
