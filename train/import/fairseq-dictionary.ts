/**
 * fairseq's dictionaries (`dict.LANG.txt`) as frost vocabularies. fairseq's ids are `<s>` 0, `<pad>` 1, `</s>` 2,
 * `<unk>` 3, then the file's words; frost keeps `<pad>`, `<unk>`, `<s>`, `</s>` at 0-3, so an import reorders the
 * rows (frostOrder) and builds the output head over fairseq's rows, gathering its logits into frost's (sourceRows).
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { FAIRSEQ_BOS } from '../../core/subword/fairseq-tokenizer.ts';
import { SPECIALS, Vocabulary } from '../../core/vocab.ts';
import { refuse } from './import-files.ts';

/** fairseq's special symbols, by fairseq id. */
const FAIRSEQ_SPECIALS = ['<s>', '<pad>', '</s>', '<unk>'] as const;

/** fairseq's Dictionary.add_from_file: "word count" lines (a `#fairseq:overwrite` flag allowed). */
export async function readDictionary(path: string): Promise<string[]> {
  if (!existsSync(path)) refuse(`${path}: no such file (fairseq's dictionary of that language)`);
  const words: string[] = [];
  const seen = new Set<string>(FAIRSEQ_SPECIALS);
  const lines = (await readFile(path, 'utf8')).split('\n');
  lines.forEach((raw, i) => {
    const line = raw.trimEnd();
    if (line === '' && i === lines.length - 1) return;
    let cut = line.lastIndexOf(' ');
    let field = line.slice(cut + 1);
    let rest = line.slice(0, Math.max(cut, 0));
    const overwrite = field === '#fairseq:overwrite';
    if (overwrite) {
      cut = rest.lastIndexOf(' ');
      field = rest.slice(cut + 1);
      rest = rest.slice(0, Math.max(cut, 0));
    }
    if (cut <= 0 || !/^\d+$/.test(field))
      refuse(`${path}: line ${i + 1} is not 'word count' (fairseq's dict format): '${line.slice(0, 80)}'`);
    if (seen.has(rest)) {
      if (overwrite) return;
      refuse(`${path}: line ${i + 1}: duplicate word '${rest}' (fairseq refuses it too)`);
    }
    if (rest === FAIRSEQ_BOS || [SPECIALS.pad, SPECIALS.unk, SPECIALS.bos, SPECIALS.eos].some((s) => s.token === rest))
      refuse(`${path}: line ${i + 1}: the word '${rest}' is a name frost reserves`);
    seen.add(rest);
    words.push(rest);
  });
  return words;
}

/**
 * frost's ids as fairseq ids: frost id i holds fairseq row order[i]. `<pad>` ← 1, `<unk>` ← 3, `<s>` ← 2 (the
 * decoder's start row: fairseq starts from `</s>`), `</s>` ← 2, then 4… unchanged, and fairseq's `<s>` (0) last.
 */
export function frostOrder(V: number): Int32Array {
  return Int32Array.from([1, 3, 2, 2, ...Array.from({ length: V - 4 }, (_, i) => i + 4), 0]);
}

/** The `sourceRows` head option: fairseq's V rows, and frost's id of each that is not at its own. */
export function sourceRows(V: number) {
  return { rows: V, moved: { '0': V, '1': 0, '2': 3, '3': 1 } };
}

/** frost's vocabulary of a fairseq dictionary (see {@link frostOrder}); `<s>`'s count 0 pins its logit. */
export function frostVocabulary(words: readonly string[], where: string): Vocabulary {
  const tokens = [
    SPECIALS.pad.token,
    SPECIALS.unk.token,
    SPECIALS.bos.token,
    SPECIALS.eos.token,
    ...words,
    FAIRSEQ_BOS,
  ];
  try {
    return Vocabulary.fromJSON(
      tokens,
      tokens.map((_, id) => (id === SPECIALS.bos.id ? 0 : 1)),
    );
  } catch (err) {
    refuse(`${where}: ${(err as Error).message}`);
  }
}
