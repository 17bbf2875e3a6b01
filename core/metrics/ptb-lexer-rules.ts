/**
 * The token rules of Stanford CoreNLP 3.4.1's PTBLexer (src/edu/stanford/nlp/process/PTBLexer.flex,
 * the jar coco-caption ships), as JS regular expressions in the order the lexer tries them, with the
 * options coco-caption runs it with (PTB3 escaping, `-preserveLines`, no `-options`).
 *
 * Porting notes:
 * - The lexer is `%caseless`, which in the JFlex version that built 3.4.1 applies to literal strings
 *   only, not to character classes (`etc. the` is not split, `etc. The` is): literals go through
 *   {@link ci}, classes stay as written.
 * - JFlex ran on UTF-16 code units, so no character outside the Basic Multilingual Plane matches a
 *   class and each one is "untokenizable" and deleted; the regexes here use code points, so an astral
 *   letter (rare in captions) counts as a letter.
 * - Rules with trailing context (`r1/r2`) compete with their whole length `r1r2`, as in JFlex; the
 *   token is `r1`.
 *
 * Isomorphic: no Node APIs.
 */

/** A literal string made case-insensitive as %caseless does (letters only). */
function ci(literal: string): string {
  return literal.replace(/[A-Za-z]/g, (c) => `[${c.toLowerCase()}${c.toUpperCase()}]`);
}

const alt = (...xs: string[]) => `(?:${xs.join('|')})`;

const SPLET = `&[aeiouAEIOU]${alt(ci('acute'), ci('grave'), ci('uml'))};`;
const LETTER_EXTRA =
  '\\u00AD\\u0237-\\u024F\\u02C2-\\u02C5\\u02D2-\\u02DF\\u02E5-\\u02FF\\u0300-\\u036F\\u0370-\\u037D\\u0384\\u0385' +
  '\\u03CF\\u03F6\\u03FC-\\u03FF\\u0483-\\u0487\\u04CF\\u04F6-\\u04FF\\u0510-\\u0525\\u055A-\\u055F\\u0591-\\u05BD' +
  '\\u05BF\\u05C1\\u05C2\\u05C4\\u05C5\\u05C7\\u0615-\\u061A\\u063B-\\u063F\\u064B-\\u065E\\u0670\\u06D6-\\u06EF' +
  '\\u06FA-\\u06FF\\u070F\\u0711\\u0730-\\u074F\\u0750-\\u077F\\u07A6-\\u07B1\\u07CA-\\u07F5\\u07FA\\u0900-\\u0903' +
  '\\u093C\\u093E-\\u094E\\u0951-\\u0955\\u0962-\\u0963\\u0981-\\u0983\\u09BC-\\u09C4\\u09C7\\u09C8\\u09CB-\\u09CD' +
  '\\u09D7\\u09E2\\u09E3\\u0A01-\\u0A03\\u0A3C\\u0A3E-\\u0A4F\\u0A81-\\u0A83\\u0ABC-\\u0ACF\\u0B82\\u0BBE-\\u0BC2' +
  '\\u0BC6-\\u0BC8\\u0BCA-\\u0BCD\\u0C01-\\u0C03\\u0C3E-\\u0C56\\u0D3E-\\u0D44\\u0D46-\\u0D48\\u0E30-\\u0E3A' +
  '\\u0E47-\\u0E4E\\u0EB1-\\u0EBC\\u0EC8-\\u0ECD';
const LETTER = alt(`[\\p{L}${LETTER_EXTRA}]`, SPLET);
const DIGIT = '[\\p{Nd}\\u07C0-\\u07C9]';
const LETTER_OR_DIGIT = alt(`[\\p{L}\\p{Nd}${LETTER_EXTRA}\\u07C0-\\u07C9]`, SPLET);
const PLAIN_LETTER_OR_DIGIT = '[\\p{L}\\p{Nd}]';

const SGML =
  '<(?:[!?][A-Za-z\\-][^>\\r\\n]*|[A-Za-z][A-Za-z0-9_:.\\-]*(?:[ ]+(?:[A-Za-z][A-Za-z0-9_:.\\-]*[ ]*=[ ]*' +
  '(?:\'[^\']*\'|"[^"]*")|[A-Za-z][A-Za-z0-9_:.\\-]*))*[ ]*\\/?|\\/[A-Za-z][A-Za-z0-9_:.\\-]*)[ ]*>';
const SPMDASH = alt(`&${alt(ci('MD'), ci('mdash'), ci('ndash'))};`, '[\\u0096\\u0097\\u2013\\u2014\\u2015]');
const SPAMP = `&${ci('amp')};`;
const SPPUNC = `&${alt(...['HT', 'TL', 'UR', 'LR', 'QC', 'QL', 'QR', 'odq', 'cdq'].map(ci), '#[0-9]+')};`;
const SPACE = '[ \\t\\u00A0\\u2000-\\u200A\\u3000]';
const NEWLINE = '(?:\\r?\\n|\\r|\\u2028|\\u2029|\\u000B|\\u000C|\\u0085)';
const SPACENL = alt(SPACE, NEWLINE);
const SENTEND = `${SPACENL}${alt(SPACENL, '\\p{Lu}', SGML)}`;
const NUM = alt(`${DIGIT}*(?:[.:,\\u00AD\\u066B\\u066C]${DIGIT}+)+`, `${DIGIT}+`);
const NUMBER = `[\\-+]?${NUM}`;
const DATE = `${DIGIT}{1,2}[\\-/]${DIGIT}{1,2}[\\-/]${DIGIT}{2,4}`;
const SUBSUPNUM =
  '[\\u207A\\u207B\\u208A\\u208B]?(?:[\\u2070\\u00B9\\u00B2\\u00B3\\u2074-\\u2079]+|[\\u2080-\\u2089]+)';
const FRAC = `(?:${DIGIT}{1,4}[\\- \\u00A0])?${DIGIT}{1,4}(?:\\\\?\\/|\\u2044)${DIGIT}{1,4}`;
const FRAC2 = '[\\u00BC\\u00BD\\u00BE\\u2153-\\u215E]';
const DOLSIGN = '(?:[A-Z]*\\$|#)';
const DOLSIGN2 = '[\\u00A2\\u00A3\\u00A4\\u00A5\\u0080\\u20A0\\u20AC\\u060B\\u0E3F\\u20A4\\uFFE0\\uFFE1\\uFFE5\\uFFE6]';
const WORD = `${LETTER}${LETTER_OR_DIGIT}*(?:[.!?]${LETTER}${LETTER_OR_DIGIT}*)*`;
const FILENAME_EXT = alt(
  ...'docx|class|java|jpeg|html|bat|bmp|cgi|cpp|dll|doc|exe|gif|htm|jar|jpg|mov|mp3|pdf|php|png|ppt|sql|tar|txt|wav|xml|zip|gz|pl|ps|py|c|h|x'
    .split('|')
    .map(ci),
);
const FILENAME = `${LETTER_OR_DIGIT}+(?:[.]${LETTER_OR_DIGIT}+)*(?:[.]${FILENAME_EXT})`;
const APOS = alt("['\\u0092\\u2019]", `&${ci('apos')};`);
const APOSETCETERA = alt(APOS, '[`\\u0091\\u2018\\u201B]');
const HYPHEN = '[\\-_\\u058A\\u2010\\u2011]';
const THING_PART = `(?:[dDoOlL]${APOSETCETERA}${PLAIN_LETTER_OR_DIGIT})?${PLAIN_LETTER_OR_DIGIT}+`;
const THING = `${THING_PART}(?:${HYPHEN}${THING_PART})*`;
const THINGA = `[A-Z]+(?:(?:[+&]|${SPAMP})[A-Z]+)+`;
const THING3 = '[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}(?:\\\\?\\/[A-Za-z0-9]+(?:-[A-Za-z]+){0,2}){1,2}';
const ACRO_SPECIAL = [
  `${alt(...['Canada', 'Sino', 'Korean', 'EU', 'Japan', 'non'].map(ci))}-${ci('U\\.S')}`,
  `${ci('U\\.S\\.')}-${alt(ci('U\\.K'), ci('U\\.S\\.S\\.R'))}`,
];
const ACRO = alt('[A-Za-z](?:\\.[A-Za-z])*', ...ACRO_SPECIAL);
const ACRO2 = alt('[A-Za-z](?:\\.[A-Za-z])+', ...ACRO_SPECIAL);
const HTHING = `[A-Za-z0-9][A-Za-z0-9.,\\u00AD]*(?:-(?:${ACRO2}\\.|[A-Za-z0-9\\u00AD]+))+`;
const REDAUX = `${APOS}${alt('[msdMSD]', ci('re'), ci('ve'), ci('ll'))}`;
const SWORD = '[A-Za-z\\u00AD]*[A-MO-Za-mo-z]\\u00AD*';
const SREDAUX = `${ci('n')}${APOSETCETERA}${ci('t')}`;
const L = '\\p{L}';
const APOWORD = alt(
  `${APOS}${ci('n')}${APOS}?`,
  `[lLdDjJ]${APOS}`,
  `${ci('Dunkin')}${APOS}`,
  `${ci('somethin')}${APOS}`,
  `${ci('ol')}${APOS}`,
  `${APOS}${ci('em')}`,
  `[A-HJ-XZn]${APOSETCETERA}${L}{2}${L}*`,
  `${APOS}[2-9]0${ci('s')}`,
  `${APOS}${ci('til')}${ci('l')}?`,
  `${L}${L}*[aeiouyAEIOUY]${APOSETCETERA}[aeiouA-Z]${L}*`,
  `${APOS}${ci('cause')}`,
  `${ci("cont'd")}\\.?`,
  ...["'twas", "nor'easter", "c'mon", "e'er", "s'mores", "ev'ry", "li'l", "nat'l"].map(ci),
  `${ci('O')}${APOSETCETERA}${ci('o')}`,
);
const APOWORD2 = `${ci('y')}${APOS}`;
const FULLURL = `${ci('http')}${ci('s')}?:\\/\\/[^ \\t\\n\\f\\r"<>|(){}]+[^ \\t\\n\\f\\r"<>|.!?(){},\\-]`;
// Porting note: `,-_` in the second class is a range (U+002C..U+005F: digits, capitals, @ and more), as in the lexer.
const LIKELYURL =
  `(?:(?:${ci('www')}\\.(?:[^ \\t\\n\\f\\r"<>|.!?(){},]+\\.)+[a-zA-Z]{2,4})|(?:(?:[^ \\t\\n\\f\\r"\`'<>|.!?(){},-_$]+\\.)+` +
  `${alt(ci('com'), ci('net'), ci('org'), ci('edu'))}))(?:\\/[^ \\t\\n\\f\\r"<>|()]+[^ \\t\\n\\f\\r"<>|.!?(){},\\-])?`;
const EMAIL =
  `(?:&${ci('lt')};|<)?[a-zA-Z0-9][^ \\t\\n\\f\\r"<>|()\\u00A0{}]*@(?:[^ \\t\\n\\f\\r"<>|(){}.\\u00A0]+\\.)*` +
  `(?:[^ \\t\\n\\f\\r"<>|(){}.\\u00A0]+)(?:&${ci('gt')};|>)?`;
const TWITTER = alt('@[a-zA-Z_][a-zA-Z_0-9]*', `#${LETTER}+`);

const ABMONTH = 'Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec';
const ABDAYS = 'Mon|Tue|Tues|Wed|Thu|Thurs|Fri';
const ABSTATE =
  'Ala|Ariz|[A]z|[A]rk|Calif|Colo|Conn|Ct|Dak|[D]el|Fla|Ga|[I]ll|Ind|Kans?|Ky|[L]a|[M]ass|Md|Mich|Minn|[M]iss|Mo|Mont|' +
  'Neb|Nev|Okla|[O]re|[P]a|Penn|Tenn|[T]ex|Va|Vt|[W]ash|Wisc?|Wyo';
const ABCOMP = 'Inc|Cos?|Corp|Pp?t[ye]s?|Ltd|Plc|Rt|Bancorp|Bhd|Assn|Univ|Intl|Sys';
const ABNUM = 'tel|est|ext|sq';
const ABPTIT = 'Jr|Sr|Bros|Ed\\.D|Ph\\.D|Blvd|Rd|Esq'; // the lexer's (Ed|Ph)\.D
const ABTITLE =
  'Mr|Mrs|Ms|[M]iss|Drs?|Profs?|Sens?|Reps?|Attys?|Lt|Col|Gen|Messrs|Govs?|Adm|Rev|Maj|Sgt|Cpl|Pvt|Capt|Ste?|Ave|Pres|' +
  'Lieut|Hon|Brig|Co?mdr|Pfc|Spc|Supts?|Det|Mt|Ft|Adj|Adv|Asst|Assoc|Ens|Insp|Mlle|Mme|Msgr|Sfc';
const ABCOMP2 = 'Invt|Elec|Natl|M[ft]g|Dept';

/** A JFlex alternation of words: literal letters caseless, `[X]` classes and `?` kept. */
function words(list: string): string {
  return alt(
    ...list
      .split('|')
      .sort((a, b) => b.length - a.length)
      .map((w) => w.replace(/\[[^\]]*\]|[A-Za-z]/g, (m) => (m.length === 1 ? ci(m) : m))),
  );
}
const ABBREV1 = `${alt(words([ABMONTH, ABDAYS, ABSTATE, ABCOMP, ABNUM, ABPTIT].join('|')), words('etc|al|seq|Bldg'))}\\.`;
const ABBREV4 = alt(words(`${ABTITLE}|vs|Alex|Wm|Jos|Cie|a\\.k\\.a|cf|TREAS|Ph|${ABCOMP2}`), ACRO);
const ABBREV2 = `${ABBREV4}\\.`;
const ACRONYM = `${ACRO}\\.`;
const ABBREV3 = `${words('ca|figs?|prop|nos?|art|bldg|pp|op')}\\.`;
/**
 * Words after which an acronym ends a sentence; their first letter is a class in the lexer ([A]bout),
 * so case-sensitive.
 */
const ACRONYM_NEXT = alt(
  ...[
    ...(
      'About|According|Additionally|After|An|A|As|At|But|Earlier|He|Her|Here|However|If|In|It|Last|Many|More|Now|' +
      'Once|One|Other|Our|She|Since|So|Some|Such|That|The|Their|Then|There|These|They|This|We|When|While|What|Yet|You'
    )
      .split('|')
      .map((w) => `${w[0]}${ci(w.slice(1))}`),
    `M${ci('r')}\\.`,
    `M${ci('s')}\\.`,
  ].sort((x, y) => y.length - x.length),
);
const PHONE =
  '(?:\\([0-9]{2,3}\\)[ \\u00A0]?|(?:\\+\\+?)?(?:[0-9]{2,4}[\\- \\u00A0])?[0-9]{2,4}[\\- \\u00A0])[0-9]{3,4}[\\- \\u00A0]?' +
  '[0-9]{3,5}|(?:(?:\\+\\+?)?[0-9]{2,4}\\.)?[0-9]{2,4}\\.[0-9]{3,4}\\.[0-9]{3,5}';
const DBLQUOT = alt('"', `&${ci('quot')};`);
const INSENTP = '[,;:\\u3001]';
// Longest alternatives first: JFlex takes the longest match, a JS alternation the first that fits.
const QUOTES = alt(
  `&${ci('apos')};`,
  "''",
  '[`\\u2018\\u2019\\u201A\\u201B\\u201C\\u201D\\u0091\\u0092\\u0093\\u0094\\u201E\\u201F\\u2039\\u203A\\u00AB\\u00BB]{1,2}',
  "['\\u0092\\u2019]",
);
const TBSPEC = alt(
  `-${alt(...['RRB', 'LRB', 'RCB', 'LCB', 'RSB', 'LSB'].map(ci))}-`,
  ci('C\\.D\\.s'),
  ci('pro-'),
  ci('anti-'),
  `${ci('S')}(?:&|${SPAMP})${ci('P-500')}`,
  `${ci('S')}(?:&|${SPAMP})${ci('Ls')}`,
  `${ci('Cap')}${APOS}${ci('n')}`,
  `${ci('c')}${APOS}${ci('est')}`,
);
const TBSPEC2 = `${APOS}[0-9][0-9]`;
const SMILEY = "[<>]?[:;=][\\-o\\*']?[()DPdpO\\\\{@|\\[\\]]";
// Porting note: the lexer's first alternative reads `\[\^x=~<>]`, an escaped bracket, so it is literal text.
const ASIANSMILEY =
  "[\\^x=~<>]\\.\\[\\^x=~<>\\]|[\\-\\^x=~<>']_[\\-\\^x=~<>']|\\([\\-\\^x=~<>'][_.]?[\\-\\^x=~<>']\\)|\\([\\^x=~<>']-[\\^x=~<>'`]\\)";
const LDOTS = alt('\\.{3,5}', '(?:\\.[ \\u00A0]){2,4}\\.', '[\\u0085\\u2026]');
const MISCSYMBOL =
  '[+%&~\\^|\\\\¦\\u00A7¨\\u00A9\\u00AC\\u00AE¯\\u00B0-\\u00B3\\u00B4-\\u00BA\\u00D7\\u00F7\\u0387\\u05BE\\u05C0\\u05C3' +
  '\\u05C6\\u05F3\\u05F4\\u0600-\\u0603\\u0606-\\u060A\\u060C\\u0614\\u061B\\u061E\\u066A\\u066D\\u0703-\\u070D\\u07F6' +
  '\\u07F7\\u07F8\\u0964\\u0965\\u0E4F\\u1FBD\\u2016\\u2017\\u2020-\\u2023\\u2030-\\u2038\\u203B\\u203E-\\u2042\\u2044' +
  '\\u207A-\\u207F\\u208A-\\u208E\\u2100-\\u214F\\u2190-\\u21FF\\u2200-\\u2BFF\\u3012\\u30FB\\uFF01-\\uFF0F' +
  '\\uFF1A-\\uFF20\\uFF3B-\\uFF40\\uFF5B-\\uFF65]';

/** What a rule does with its match. */
export type PtbAction =
  | { kind: 'token' } // the text as it is
  | { kind: 'map'; to: (text: string) => string } // a normalised token
  | { kind: 'quote'; left: boolean } // handleQuotes(text, probablyLeft)
  | { kind: 'split'; keep: number } // emit the first `keep` code units, lex the rest again (cannot → can not)
  | { kind: 'abbrev' } // the abbreviation with its period, and the period again as a token
  | { kind: 'acronym' } // as abbrev, but a one-letter acronym gives the letter, then the period
  | { kind: 'skip' } // whitespace and deleted characters
  | { kind: 'newline' };

export interface PtbRule {
  name: string;
  /** The token's pattern. */
  pattern: string;
  /** JFlex trailing context (`pattern/trail`): must follow, counts for longest match, is not consumed. */
  trail?: string;
  /**
   * Search for the longest match, as JFlex's automaton finds it: a JS regex stops at the first match its
   * backtracking reaches, which for these nested patterns can be shorter (`www.x.coma/b` read as
   * `www.x.co` + `ma`… instead of host `www.x.coma` + path `/b`).
   */
  longest?: true;
  action: PtbAction;
}

const token: PtbAction = { kind: 'token' };
const map = (to: (text: string) => string): PtbAction => ({ kind: 'map', to });
const removeSoftHyphens = (text: string) => (text.includes('\u00AD') ? text.replaceAll('\u00AD', '') || '-' : text);
const normalizeAmp = (text: string) => text.replace(/&amp;/gi, '&');
const toParens = (text: string) => text.replaceAll('(', '-LRB-').replaceAll(')', '-RRB-');
const FRACTIONS: Record<string, string> = {
  '\u00BC': '1/4',
  '\u00BD': '1/2',
  '\u00BE': '3/4',
  '\u2153': '1/3',
  '\u2154': '2/3',
};
const normalizeCurrency = (text: string) =>
  text
    .replaceAll('\u00A2', 'cents')
    .replaceAll('\u00A3', '#')
    .replace(/[\u0080\u00A4\u20A0\u20AC]/g, '$');

/** PTBLexer's rules in its order; on equal lengths the earlier rule wins, as in JFlex. */
export const PTB_RULES: readonly PtbRule[] = [
  { name: 'c++', pattern: ci('c++').replaceAll('+', '[+]'), action: token },
  { name: 'c#', pattern: `${alt(ci('c'), ci('f'))}#`, action: token },
  { name: 'cannot', pattern: ci('cannot'), action: { kind: 'split', keep: 3 } },
  { name: "'twas", pattern: ci("'twas"), action: { kind: 'split', keep: 2 } },
  { name: "'tis", pattern: ci("'tis"), action: { kind: 'split', keep: 2 } },
  {
    name: 'gonna',
    pattern: alt(...['gonna', 'gotta', 'lemme', 'gimme', 'wanna'].map(ci)),
    action: { kind: 'split', keep: 3 },
  },
  { name: 'SGML', pattern: SGML, action: map((t) => t.replaceAll(' ', '\u00A0')) },
  { name: 'SPMDASH', pattern: SPMDASH, action: map(() => '--') },
  { name: 'SPAMP', pattern: SPAMP, action: map(normalizeAmp) },
  { name: 'SPPUNC', pattern: SPPUNC, action: token },
  { name: 'WORD/REDAUX', pattern: WORD, trail: REDAUX, action: map(removeSoftHyphens) },
  { name: 'SWORD/SREDAUX', pattern: SWORD, trail: SREDAUX, action: map(removeSoftHyphens) },
  { name: 'WORD', pattern: WORD, action: map(removeSoftHyphens) },
  { name: 'APOWORD', pattern: APOWORD, action: token },
  { name: 'APOWORD2', pattern: APOWORD2, trail: L, action: token },
  { name: 'FULLURL', pattern: FULLURL, action: token, longest: true },
  { name: 'LIKELYURL', pattern: LIKELYURL, action: token, longest: true },
  { name: 'EMAIL', pattern: EMAIL, action: token, longest: true },
  { name: 'TWITTER', pattern: TWITTER, action: token },
  { name: 'REDAUX/', pattern: REDAUX, trail: '[^A-Za-z]', action: { kind: 'quote', left: false } },
  { name: 'SREDAUX/', pattern: SREDAUX, trail: '[^A-Za-z]', action: { kind: 'quote', left: false } },
  { name: 'DATE', pattern: DATE, action: token },
  { name: 'NUMBER', pattern: NUMBER, action: map(removeSoftHyphens) },
  { name: 'SUBSUPNUM', pattern: SUBSUPNUM, action: token },
  { name: 'FRAC', pattern: FRAC, action: map((t) => t.replaceAll(' ', '\u00A0')) },
  { name: 'FRAC2', pattern: FRAC2, action: map((t) => FRACTIONS[t] ?? t) },
  { name: 'TBSPEC', pattern: TBSPEC, action: map(normalizeAmp) },
  { name: 'THING3', pattern: THING3, action: token },
  { name: 'DOLSIGN', pattern: DOLSIGN, action: token },
  { name: 'DOLSIGN2', pattern: DOLSIGN2, action: map(normalizeCurrency) },
  {
    name: 'ACRONYM/',
    pattern: ACRONYM,
    trail: `${SPACENL}+${alt(ACRONYM_NEXT, SGML)}${SPACENL}`,
    action: { kind: 'acronym' },
  },
  { name: 'ABBREV3/', pattern: ABBREV3, trail: `${SPACENL}?\\p{Nd}`, action: token },
  {
    name: 'pty.',
    pattern: `${alt(`${ci('pt')}[eyEY]`, ci('co'))}\\.`,
    trail: `${SPACE}${alt(ci('ltd'), ci('lim'))}`,
    action: token,
  },
  { name: 'ABBREV1/SENTEND', pattern: ABBREV1, trail: SENTEND, action: { kind: 'abbrev' } },
  { name: 'ABBREV1/..', pattern: ABBREV1, trail: '[^]{2}', action: token },
  { name: 'ABBREV1', pattern: ABBREV1, action: { kind: 'abbrev' } },
  { name: 'ABBREV2', pattern: ABBREV2, action: token },
  { name: 'ABBREV4/', pattern: ABBREV4, trail: SPACE, action: token },
  { name: 'ACRO/', pattern: ACRO, trail: SPACENL, action: token },
  { name: 'TBSPEC2/', pattern: TBSPEC2, trail: SPACENL, action: token },
  { name: 'FILENAME/', pattern: FILENAME, trail: alt(SPACENL, '[.?!,]'), action: token },
  { name: 'WORD./', pattern: `${WORD}\\.`, trail: INSENTP, action: map(removeSoftHyphens) },
  { name: 'PHONE', pattern: PHONE, action: map((t) => toParens(t.replaceAll(' ', '\u00A0'))), longest: true },
  { name: 'DBLQUOT/', pattern: DBLQUOT, trail: '[A-Za-z0-9$]', action: { kind: 'quote', left: true } },
  { name: 'DBLQUOT', pattern: DBLQUOT, action: { kind: 'quote', left: false } },
  { name: 'DEL', pattern: '\\x7f', action: { kind: 'skip' } },
  { name: 'LESSTHAN', pattern: alt('<', `&${ci('lt')};`), action: map(() => '<') },
  { name: 'GREATERTHAN', pattern: alt('>', `&${ci('gt')};`), action: map(() => '>') },
  { name: 'SMILEY/', pattern: SMILEY, trail: '[^A-Za-z0-9]', action: map(toParens) },
  { name: 'ASIANSMILEY', pattern: ASIANSMILEY, action: map(toParens) },
  { name: '{', pattern: '\\{', action: map(() => '-LCB-') },
  { name: '}', pattern: '\\}', action: map(() => '-RCB-') },
  { name: '[', pattern: '\\[', action: map(() => '-LSB-') },
  { name: ']', pattern: '\\]', action: map(() => '-RSB-') },
  { name: '(', pattern: '\\(', action: map(() => '-LRB-') },
  { name: ')', pattern: '\\)', action: map(() => '-RRB-') },
  { name: 'HYPHENS', pattern: '-+', action: map((t) => (t.length >= 3 && t.length <= 4 ? '--' : t)) },
  { name: 'LDOTS', pattern: LDOTS, action: map(() => '...') },
  { name: 'FNMARKS', pattern: alt('@+', '#+', '_+'), action: token },
  { name: 'ASTS', pattern: alt('\\*+', '(?:\\\\\\*){1,3}'), action: token },
  { name: 'INSENTP', pattern: INSENTP, action: token },
  { name: '?!', pattern: '[?!]+', action: token },
  { name: 'PERIOD', pattern: '[.¡¿\\u037E\\u0589\\u061F\\u06D4\\u0700-\\u0702\\u07FA\\u3002]', action: token },
  { name: '=', pattern: '=', action: token },
  { name: '/', pattern: '\\/', action: token },
  { name: 'HTHING./', pattern: `${HTHING}\\.`, trail: INSENTP, action: map(removeSoftHyphens) },
  { name: 'HTHING', pattern: HTHING, action: map(removeSoftHyphens) },
  { name: 'THING./', pattern: `${THING}\\.`, trail: INSENTP, action: token },
  { name: 'THING', pattern: THING, action: token },
  { name: 'THINGA./', pattern: `${THINGA}\\.`, trail: INSENTP, action: map(normalizeAmp) },
  { name: 'THINGA', pattern: THINGA, action: map(normalizeAmp) },
  { name: "'/", pattern: "'", trail: '[A-Za-z][^ \\t\\n\\r\\u00A0]', action: { kind: 'quote', left: true } },
  { name: 'REDAUX', pattern: REDAUX, action: { kind: 'quote', left: false } },
  { name: 'SREDAUX', pattern: SREDAUX, action: { kind: 'quote', left: false } },
  { name: 'QUOTES', pattern: QUOTES, action: { kind: 'quote', left: false } },
  { name: 'FAKEDUCKFEET', pattern: alt('<<', '>>'), action: token },
  { name: 'MISCSYMBOL', pattern: MISCSYMBOL, action: token },
  { name: 'SPACES', pattern: alt('\\0', `${SPACE}+`, '[\\u200B\\u200E\\u200F\\uFEFF]'), action: { kind: 'skip' } },
  { name: 'NEWLINE', pattern: NEWLINE, action: { kind: 'newline' } },
  { name: '&nbsp;', pattern: `&${ci('nbsp')};`, action: { kind: 'skip' } },
];
