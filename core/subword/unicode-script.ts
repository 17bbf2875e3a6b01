/**
 * SentencePiece's default `split_by_unicode_script`: a learned piece never mixes Unicode scripts, so `Gras.`
 * is learned as `Gras` and `.`, and the word stays reusable before any punctuation. Japanese kana count as Han
 * (as SentencePiece merges them), combining marks (script Inherited) belong to the character before them, and
 * Common (punctuation, digits, symbols) is a script of its own. Scripts outside the list below share one group.
 *
 * Isomorphic: no Node APIs.
 */
import { SPACE_MARK } from './segmenter.ts';

const SCRIPTS = [
  'Latin',
  'Greek',
  'Cyrillic',
  'Armenian',
  'Hebrew',
  'Arabic',
  'Syriac',
  'Thaana',
  'Devanagari',
  'Bengali',
  'Gurmukhi',
  'Gujarati',
  'Oriya',
  'Tamil',
  'Telugu',
  'Kannada',
  'Malayalam',
  'Sinhala',
  'Thai',
  'Lao',
  'Tibetan',
  'Myanmar',
  'Georgian',
  'Hangul',
  'Ethiopic',
  'Khmer',
  'Mongolian',
  'Bopomofo',
  'Han',
  'Common',
] as const;
const PATTERNS = SCRIPTS.map((name) => [name, new RegExp(`^\\p{Script=${name}}$`, 'u')] as const);
const KANA = /^[\p{Script=Hiragana}\p{Script=Katakana}\u30FC]$/u;
const INHERITED = /^\p{Script=Inherited}$/u;
const cache = new Map<string, string | null>();

/** A character's script group; null for a combining mark, which joins the group of the character before it. */
export function scriptOf(ch: string): string | null {
  let script = cache.get(ch);
  if (script === undefined) {
    if (KANA.test(ch)) script = 'Han';
    else if (INHERITED.test(ch)) script = null;
    else script = PATTERNS.find(([, pattern]) => pattern.test(ch))?.[0] ?? 'Other';
    cache.set(ch, script);
  }
  return script;
}

/**
 * The script group of a learned piece: that of its first character that has one (`▁` and combining marks have
 * none), or null when none does. Trainers only build pieces within one group, so the first stands for all.
 */
export function pieceScript(piece: string): string | null {
  for (const ch of piece) {
    if (ch === SPACE_MARK) continue;
    const script = scriptOf(ch);
    if (script !== null) return script;
  }
  return null;
}
