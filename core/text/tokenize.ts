/**
 * Word tokenisers for the text side of a model. A model card names its tokeniser by key in
 * {@link tokenizers}, so training, `serve` and the browser split text the same way.
 *
 * The `multi30k` tokeniser reproduces the `lc.norm.tok` files of the Multi30k data set, made by
 * `lowercase.perl | normalize-punctuation.perl -l L | tokenizer.perl -l L` from a December 2017 Moses
 * snapshot (multi30k/dataset, scripts/task1-tokenize.sh).
 *
 * Porting note: the released `lc.norm.tok` files are XML-escaped (`man &apos;s`, `&quot;`). We follow
 * `tokenizer.perl -no-escape` instead, so tokens hold the real characters (`man 's`, `"`) and detokenise
 * cleanly; token boundaries and counts are the same as in the released files.
 *
 * Isomorphic: no Node APIs, only ES2022 and Unicode property escapes.
 */

/** A named tokeniser: text to word tokens and back. */
export interface Tokenizer {
  /** The key a model card uses to name this tokeniser. */
  readonly name: string;
  /** Splits one line (sentence) of text into tokens. */
  tokenize(text: string, lang: string): string[];
  /** Joins tokens back into readable text; the inverse of {@link Tokenizer.tokenize} up to case and spacing. */
  detokenize(tokens: readonly string[], lang: string): string;
}

// ---------------------------------------------------------------------------------------------
// Character classes.
// Porting note: Perl's \p{IsAlpha} is the Alphabetic property (letters plus Nl and combining vowel
// signs), not \p{L}; \p{IsAlnum} is Alphabetic plus Nd; \p{IsLower} is the Lowercase property; \p{IsN}
// is \p{N}. We use the same properties so non-Latin scripts split as Moses splits them.

const ALPHA = '\\p{Alphabetic}';
const ALNUM = '\\p{Alphabetic}\\p{Nd}';
/** Perl's \s on character strings; JS \s differs (it has U+FEFF, lacks U+0085). */
const PERL_SPACE = '\\t\\n\\v\\f\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';

const re = (source: string, flags = 'gu'): RegExp => new RegExp(source, flags);

// ---------------------------------------------------------------------------------------------
// normalize-punctuation.perl

/**
 * Port of Moses `normalize-punctuation.perl -l lang` (without `-penn`) as of the December 2017
 * snapshot Multi30k used.
 *
 * Porting note: the Perl script reads bytes (no `use utf8`), so `\d`, `[a-z]` and `\s` there are
 * ASCII-only; the regexes below are written ASCII-only to match. The "pseudo-space" rules target
 * U+00A0 (a literal no-break space in the Perl source). Later Moses versions (and sacremoses) also
 * delete a space before `.!:?;,`; the 2017 script does not, and neither do we.
 */
export function normalizePunctuation(text: string, lang: string): string {
  let s = text.replace(/\r/g, '');
  // remove extra spaces
  s = s.replace(/\(/g, ' (').replace(/\)/g, ') ').replace(/ +/g, ' ');
  s = s.replace(/\) ([.!:?;,])/g, ')$1');
  s = s.replace(/\( /g, '(').replace(/ \)/g, ')');
  s = s.replace(/([0-9]) %/g, '$1%');
  s = s.replace(/ :/g, ':').replace(/ ;/g, ';');
  // normalize unicode punctuation (the non -penn branch)
  s = s.replace(/`/g, "'").replace(/''/g, ' " ');
  s = s.replace(/„/g, '"').replace(/“/g, '"').replace(/”/g, '"');
  s = s.replace(/–/g, '-').replace(/—/g, ' - ').replace(/ +/g, ' ');
  s = s.replace(/´/g, "'");
  s = s.replace(/([a-zA-Z])‘([a-zA-Z])/g, "$1'$2").replace(/([a-zA-Z])’([a-zA-Z])/g, "$1'$2");
  s = s.replace(/‘/g, "'").replace(/‚/g, "'").replace(/’/g, '"');
  s = s.replace(/''/g, '"').replace(/´´/g, '"');
  s = s.replace(/…/g, '...');
  // French quotes
  s = s.replace(/ « /g, ' "').replace(/« /g, '"').replace(/«/g, '"');
  s = s.replace(/ » /g, '" ').replace(/ »/g, '"').replace(/»/g, '"');
  // handle pseudo-spaces (U+00A0)
  s = s
    .replace(/\u00a0%/g, '%')
    .replace(/nº\u00a0/g, 'nº ')
    .replace(/\u00a0:/g, ':');
  s = s.replace(/\u00a0ºC/g, ' ºC').replace(/\u00a0cm/g, ' cm');
  s = s
    .replace(/\u00a0\?/g, '?')
    .replace(/\u00a0!/g, '!')
    .replace(/\u00a0;/g, ';');
  s = s.replace(/,\u00a0/g, ', ').replace(/ +/g, ' ');

  if (lang === 'en') {
    // English "quotation," followed by comma, style
    s = s.replace(/"([,.]+)/g, '$1"');
  } else if (lang !== 'cs' && lang !== 'cz') {
    // German/Spanish/French "quotation", followed by comma, style
    s = s.replace(/,"/g, '",');
    s = s.replace(/(\.+)"([\t\n\v\f\r ]*[^<])/g, '"$1$2'); // don't fix period at end of sentence
  }

  const decimalComma = ['de', 'es', 'cz', 'cs', 'fr'].includes(lang);
  return s.replace(/([0-9])\u00a0([0-9])/g, decimalComma ? '$1,$2' : '$1.$2');
}

// ---------------------------------------------------------------------------------------------
// tokenizer.perl

/** Prefix kinds, as in Moses' nonbreaking_prefix files: 1 always non-breaking, 2 only before a number. */
type PrefixKind = 1 | 2;

/**
 * Moses non-breaking prefixes (scripts/share/nonbreaking_prefixes/nonbreaking_prefix.{en,de,fr}).
 *
 * Porting note: only entries that are already lower-case are listed. Multi30k lower-cases before
 * tokenising and the lookup is case-sensitive, so the capitalised entries (`Dr`, `Jan`, `A`..`Z`) can
 * never match. Entries with a dot and a letter (`z.b`, `i.e`) are also covered by the generic rule.
 * Languages without a list fall back to English, as `load_prefixes` does.
 */
const NONBREAKING_PREFIXES: Record<string, ReadonlyMap<string, PrefixKind>> = {
  en: prefixMap('v vs i.e rev e.g', 'pp'),
  de: prefixMap(
    [
      'a b c d e f g h i j k l m n o p q r s t u v w x y z',
      'i ii iii iv v vi vii viii ix x xi xii xiii xiv xv xvi xvii xviii xix xx',
      'bzw v vs usw d.h u.a etc ggf vgl z.t sogen ff u.e g.u c.-à-d u.s.w sog u.ä evtl u.u o.ä b.a z.zt',
      'spp sen k.o jun dgl dergl zzt usf s.p.a bzgl pp ca',
      Array.from({ length: 99 }, (_, i) => String(i + 1)).join(' '),
    ].join(' '),
    '',
  ),
  fr: prefixMap(
    [
      'b c d e f g h i j k l m n o p q r s t u v w x y z',
      'art ann apr av auj lib boul ca c.-à-d cf ch.-l chap contr dir éd e.g env al etc ex fasc fém fig fr',
      'hab ibid id i.e inf loc.cit masc ms n/réf p.c.c pl pp p.ex p.j sec sect sing sq sqq suiv sup suppl',
      'tél vb vol vs',
    ].join(' '),
    '',
  ),
};

function prefixMap(always: string, numericOnly: string): Map<string, PrefixKind> {
  const map = new Map<string, PrefixKind>();
  for (const p of always.split(' ').filter(Boolean)) map.set(p, 1);
  for (const p of numericOnly.split(' ').filter(Boolean)) map.set(p, 2);
  return map;
}

const RE_WHITESPACE_RUN = re(`[${PERL_SPACE}]+`);
const RE_CONTROL = /[\u0000-\u001f]/g; // eslint-disable-line no-control-regex -- sacreBLEU strips these
const RE_SPECIAL_DEFAULT = re(`([^${ALNUM}\\s.'\`,\\-])`);
const RE_SPECIAL_FI_SV = re(`([^${ALNUM}\\s.:'\`,\\-])`);
const RE_COLON_FI_SV = re(`(:)(?=$|[^\\p{Lowercase}])`);
const RE_SPECIAL_CA = re(`([^${ALNUM}\\s.·'\`,\\-])`);
const RE_MIDDOT_CA = re(`(·)(?=$|[^\\p{Lowercase}])`);
const RE_COMMA_AFTER_NON_NUMBER = re(`([^\\p{N}])[,]`);
const RE_COMMA_BEFORE_NON_NUMBER = re(`[,]([^\\p{N}])`);
const RE_COMMA_AFTER_NUMBER_AT_END = re(`([\\p{N}])[,]$`);
const RE_APOS_NONALPHA_NONALPHA = re(`([^${ALPHA}])[']([^${ALPHA}])`);
const RE_APOS_NONALNUM_ALPHA = re(`([^${ALPHA}\\p{N}])[']([${ALPHA}])`);
const RE_APOS_NONALPHA_ALPHA = re(`([^${ALPHA}])[']([${ALPHA}])`);
const RE_APOS_ALPHA_NONALPHA = re(`([${ALPHA}])[']([^${ALPHA}])`);
const RE_APOS_ALPHA_ALPHA = re(`([${ALPHA}])[']([${ALPHA}])`);
const RE_APOS_NUMBER_S = re(`([\\p{N}])[']([s])`);
const RE_WORD_WITH_FINAL_DOT = /^(\S+)\.$/u;
const RE_HAS_ALPHA = re(`[${ALPHA}]`, 'u');
const RE_STARTS_LOWER = /^[\p{Lowercase}]/u;
const RE_STARTS_DIGIT = /^[0-9]+/;

/**
 * Port of Moses `tokenizer.perl -l lang -no-escape` (no `-a`, no `-penn`, no protected patterns),
 * returning the tokenised line as one space-separated string.
 *
 * Porting note: Perl `split(/\s/, ...)` keeps empty fields between double spaces (which matter to the
 * "next word is lower-case" test) and drops trailing ones; {@link perlSplitSpace} mimics that.
 * Porting note: the `tdt` (Tetun) and `so` (Somali) apostrophe rules are omitted; those languages get
 * the generic rule.
 */
export function mosesTokenize(line: string, lang: string): string {
  let text = ` ${line} `;
  // remove ASCII junk
  text = text.replace(RE_WHITESPACE_RUN, ' ').replace(RE_CONTROL, '');
  text = text.replace(/ +/g, ' ').replace(/^ /, '').replace(/ $/, '');
  if (text === '') return ''; // tokenizer.perl prints blank lines unchanged

  // separate out all "other" special characters
  if (lang === 'fi' || lang === 'sv') {
    // the colon can be used inside words as an apostrophe-like character: USA:n, 20:een
    text = text.replace(RE_SPECIAL_FI_SV, ' $1 ').replace(RE_COLON_FI_SV, ' $1 ');
  } else if (lang === 'ca') {
    // the middle dot can be used inside Catalan words: il·lusió
    text = text.replace(RE_SPECIAL_CA, ' $1 ').replace(RE_MIDDOT_CA, ' $1 ');
  } else {
    text = text.replace(RE_SPECIAL_DEFAULT, ' $1 ');
  }

  // multi-dots stay together
  text = text.replace(/\.([.]+)/g, ' DOTMULTI$1');
  while (/DOTMULTI\./.test(text)) {
    text = text.replace(/DOTMULTI\.([^.])/gu, 'DOTDOTMULTI $1');
    text = text.replace(/DOTMULTI\./g, 'DOTDOTMULTI');
  }

  // separate out "," except if within numbers (5,300); two steps so "A,B,C" splits fully
  text = text.replace(RE_COMMA_AFTER_NON_NUMBER, '$1 , ');
  text = text.replace(RE_COMMA_BEFORE_NON_NUMBER, ' , $1');
  // separate "," after a number if it's the end of a sentence
  text = text.replace(RE_COMMA_AFTER_NUMBER_AT_END, '$1 ,');

  text = splitApostrophes(text, lang);

  // word token method: a final period is split off unless the word is a known abbreviation.
  // Porting note: later Moses versions always split the period off the last word of the line; the 2017
  // snapshot does not, so a line-final prefix keeps its dot, e.g. de "nummer 10." and fr "terrain sec.".
  // Multi30k's released files have exactly these tokens.
  const prefixes = NONBREAKING_PREFIXES[lang] ?? NONBREAKING_PREFIXES.en!;
  const words = perlSplitSpace(text);
  let out = '';
  for (let i = 0; i < words.length; i++) {
    let word = words[i]!;
    const match = RE_WORD_WITH_FINAL_DOT.exec(word);
    if (match) {
      const pre = match[1]!;
      const next = i < words.length - 1 ? words[i + 1]! : undefined;
      const kind = prefixes.get(pre);
      if (
        (pre.includes('.') && RE_HAS_ALPHA.test(pre)) ||
        kind === 1 ||
        (next !== undefined && RE_STARTS_LOWER.test(next))
      ) {
        // no change
      } else if (kind === 2 && next !== undefined && RE_STARTS_DIGIT.test(next)) {
        // no change
      } else {
        word = `${pre} .`;
      }
    }
    out += `${word} `;
  }

  // clean up extraneous spaces
  text = out.replace(/ +/g, ' ').replace(/^ /, '').replace(/ $/, '');
  // .' at end of sentence is missed
  text = text.replace(/\.' ?$/, " . ' ");

  // restore multi-dots
  while (text.includes('DOTDOTMULTI')) text = text.replace(/DOTDOTMULTI/g, 'DOTMULTI.');
  return text.replace(/DOTMULTI/g, '.');
}

/** Language-specific apostrophe splitting: English splits right (`dog 's`), French left (`l' homme`). */
function splitApostrophes(text: string, lang: string): string {
  if (lang === 'en') {
    return text
      .replace(RE_APOS_NONALPHA_NONALPHA, "$1 ' $2")
      .replace(RE_APOS_NONALNUM_ALPHA, "$1 ' $2")
      .replace(RE_APOS_ALPHA_NONALPHA, "$1 ' $2")
      .replace(RE_APOS_ALPHA_ALPHA, "$1 '$2")
      .replace(RE_APOS_NUMBER_S, "$1 '$2"); // special case for "1990's"
  }
  if (lang === 'fr' || lang === 'it' || lang === 'ga' || lang === 'ca') {
    return text
      .replace(RE_APOS_NONALPHA_NONALPHA, "$1 ' $2")
      .replace(RE_APOS_NONALPHA_ALPHA, "$1 ' $2")
      .replace(RE_APOS_ALPHA_NONALPHA, "$1 ' $2")
      .replace(RE_APOS_ALPHA_ALPHA, "$1' $2");
  }
  // Porting note: this generic rule also covers German, so "mcdonald's" becomes "mcdonald ' s";
  // that is what Moses (and hence Multi30k) does for de.
  return text.replace(/'/g, " ' ");
}

/** Perl's `split(/\s/, text)`: empty fields between separators are kept, trailing empty fields dropped. */
function perlSplitSpace(text: string): string[] {
  const fields = text.split(/[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/u);
  while (fields.length > 0 && fields[fields.length - 1] === '') fields.pop();
  return fields;
}

// ---------------------------------------------------------------------------------------------
// detokenizer.perl

const RE_RIGHT_SHIFT = /^[\p{Sc}([{¿¡]+$/u;
const RE_LEFT_SHIFT = /^[,.?!:;\\%}\])]+$/u;
const RE_FR_SPACED_PUNCT = /^[?!:;\\%]$/u;
const RE_EN_CONTRACTION = re(`^['][${ALPHA}]`, 'u');
const RE_ENDS_ALNUM = re(`[${ALNUM}]$`, 'u');
const RE_ELIDED = re(`[${ALPHA}][']$`, 'u');
const RE_STARTS_ALPHA = re(`^[${ALPHA}]`, 'u');
const RE_QUOTES = /^['"„“`]+$/u;

/**
 * Port of Moses `detokenizer.perl -l lang` (the 2011 revision that Multi30k-era systems used), minus the
 * CJK and Czech special cases: attaches punctuation, English contractions (`'s`, `'t`), French
 * elisions (`l'`), and pairs up quotes.
 *
 * Porting note: we also left-attach a PTB-style `n't` token in English (`do n't` -> `don't`), which
 * Moses leaves alone; the `multi30k` tokeniser never produces it (Moses gives `don 't`), but text from
 * other English tokenisers does. In French, `? ! : ; %` keep a plain space before them, as in Moses.
 */
function mosesDetokenize(tokens: readonly string[], lang: string): string {
  const words = tokens.filter((t) => t !== '');
  const quoteCount = new Map<string, number>();
  let text = '';
  let prependSpace = ' ';
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    const prev = i > 0 ? words[i - 1]! : undefined;
    if (RE_RIGHT_SHIFT.test(word)) {
      // currency and opening brackets attach to what follows
      text += prependSpace + word;
      prependSpace = '';
    } else if (RE_LEFT_SHIFT.test(word)) {
      // closing punctuation attaches to what precedes
      if (lang === 'fr' && RE_FR_SPACED_PUNCT.test(word)) text += ' ';
      text += word;
      prependSpace = ' ';
    } else if (lang === 'en' && prev !== undefined && RE_EN_CONTRACTION.test(word) && RE_ENDS_ALNUM.test(prev)) {
      // left-shift the contraction for English
      text += word;
      prependSpace = ' ';
    } else if (lang === 'en' && prev !== undefined && word === "n't" && RE_ENDS_ALNUM.test(prev)) {
      text += word;
      prependSpace = ' ';
    } else if (
      (lang === 'fr' || lang === 'it') &&
      i < words.length - 1 &&
      RE_ELIDED.test(word) &&
      RE_STARTS_ALPHA.test(words[i + 1]!)
    ) {
      // right-shift the contraction for French and Italian
      text += prependSpace + word;
      prependSpace = '';
    } else if (RE_QUOTES.test(word)) {
      // combine quotes smartly: odd occurrences open, even ones close
      const normalized = /^[„“”]+$/u.test(word) ? '"' : word;
      const count = quoteCount.get(normalized) ?? 0;
      if (count % 2 === 0) {
        if (lang === 'en' && word === "'" && prev !== undefined && /s$/.test(prev)) {
          // single quote for possessives ending in s: "the jones' house"
          text += word;
          prependSpace = ' ';
        } else {
          text += prependSpace + word;
          prependSpace = '';
          quoteCount.set(normalized, count + 1);
        }
      } else {
        text += word;
        prependSpace = ' ';
        quoteCount.set(normalized, count + 1);
      }
    } else {
      text += prependSpace + word;
      prependSpace = ' ';
    }
  }
  return text.replace(/ +/g, ' ').replace(/^ /, '').replace(/ $/, '');
}

// ---------------------------------------------------------------------------------------------
// Public API

/**
 * Multi30k `lc.norm.tok` tokenisation: lower-case, Moses punctuation normalisation, Moses tokenisation.
 *
 * @example tokenize('A man\'s dog doesn\'t run.', 'en') // ['a', 'man', "'s", 'dog', 'doesn', "'t", 'run', '.']
 * @param lang ISO 639-1 code; selects apostrophe, abbreviation and number rules (en, de, fr, ...).
 */
export function tokenize(text: string, lang: string): string[] {
  // Porting note: lowercase.perl uses Perl's lc; JS toLowerCase agrees except for Greek final sigma
  // (JS writes ς at word ends, Perl σ), which does not occur in Multi30k's languages.
  const line = mosesTokenize(normalizePunctuation(text.toLowerCase(), lang), lang);
  // The ".' at end of sentence" rule can leave double and trailing spaces; they are not tokens.
  return line.split(' ').filter((t) => t !== '');
}

/** Inverse of {@link tokenize} up to case: Moses-style detokenisation. */
export function detokenize(tokens: readonly string[], lang: string): string {
  return mosesDetokenize(tokens, lang);
}

const multi30k: Tokenizer = { name: 'multi30k', tokenize, detokenize };

const whitespace: Tokenizer = {
  name: 'whitespace',
  tokenize: (text) => text.split(/\s+/u).filter((t) => t !== ''),
  detokenize: (tokens) => tokens.join(' '),
};

/** Python 2's `string.punctuation`: the 32 ASCII punctuation characters. */
const ASCII_PUNCTUATION = /[!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~]/g;

/**
 * Caption tokenisation as in Karpathy's neuraltalk2 `prepro.py`:
 * `str(s).lower().translate(None, string.punctuation).strip().split()`. Punctuation is deleted, not
 * replaced by a space, so `tri-colored` becomes `tricolored` and `dog's` becomes `dogs`.
 *
 * Porting note: Python 2 lower-cases ASCII only; `toLowerCase` also lower-cases other scripts.
 */
const caption: Tokenizer = {
  name: 'caption',
  tokenize: (text) =>
    text
      .toLowerCase()
      .replace(ASCII_PUNCTUATION, '')
      .split(/\s+/u)
      .filter((t) => t !== ''),
  detokenize: (tokens) => tokens.join(' '),
};

/** Tokenisers by the name a model card stores in its `tokenizer` field. */
export const tokenizers = { multi30k, whitespace, caption } as const satisfies Record<string, Tokenizer>;

export type TokenizerName = keyof typeof tokenizers;

/** Looks up a tokeniser by name; the error lists the known names. */
export function getTokenizer(name: string): Tokenizer {
  if (Object.hasOwn(tokenizers, name)) return tokenizers[name as TokenizerName];
  throw new Error(`unknown tokenizer '${name}' (known: ${Object.keys(tokenizers).join(', ')})`);
}
