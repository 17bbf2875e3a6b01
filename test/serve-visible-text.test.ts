/**
 * serve/schemas.ts's hasVisibleChar, which refuses texts of only spaces and format characters: it must agree
 * with the definition it replaced (strip every White_Space and Cf code point, then look at what is left) on every
 * string, lone surrogates and characters beyond the BMP included.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { SeededRandom } from '../core/random.ts';
import { hasVisibleChar } from '../serve/schemas.ts';

const stripped = (s: string) => s.replace(/[\p{White_Space}\p{Cf}]/gu, '').length > 0;

// Invisible: spaces, NBSP, line separator, ideographic space, ZWSP, ZWJ, BOM, soft hyphen, direction marks, a tag
// character (Cf beyond the BMP). Visible: letters, a combining mark, an emoji, lone surrogates, NUL, a control.
const PIECES = [
  ' ',
  '\t',
  '\n',
  '\u00a0',
  '\u2028',
  '\u3000',
  '\u200b',
  '\u200d',
  '\ufeff',
  '\u00ad',
  '\u200e',
  '\u200f',
  '\u{e0041}',
  'a',
  'ä',
  '\u0301',
  '🚲',
  '\ud800',
  '\udc00',
  '\u0000',
  '\u0007',
];

test('hasVisibleChar agrees with stripping the invisible characters', () => {
  const rng = new SeededRandom(7, 'visible-text');
  for (let i = 0; i < 5000; i++) {
    const n = Math.floor(rng.next() * 6);
    // Mostly invisible pieces, so both answers come up often.
    const s = Array.from(
      { length: n },
      () => PIECES[rng.next() < 0.8 ? Math.floor(rng.next() * 13) : Math.floor(rng.next() * PIECES.length)],
    ).join('');
    assert.equal(hasVisibleChar(s), stripped(s), JSON.stringify(s));
  }
  assert.equal(hasVisibleChar(''), false);
  assert.equal(hasVisibleChar(' \u200b\ufeff\u{e0041} '), false);
  assert.equal(hasVisibleChar('\u200ba'), true);
  assert.equal(hasVisibleChar('\ud800'), true, 'a lone surrogate is not invisible');
});
