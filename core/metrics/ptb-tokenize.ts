/**
 * coco-caption's tokenisation of captions before scoring (pycocoevalcap/tokenizer/ptbtokenizer.py):
 * the captions, one per line, go through Stanford CoreNLP 3.4.1's PTBTokenizer with `-preserveLines
 * -lowerCase`, and then the tokens on its punctuation list are dropped. Reproduced here without Java:
 * the lexer's rules are in ./ptb-lexer-rules.ts, run with the lexer's longest-match semantics.
 *
 * What that does to captions: clitics are split (`dog's` → `dog 's`, `don't` → `do n't`), hyphenated
 * words and numbers stay whole (`t-shirt`, `3.5`, `1,000`), quotes become `` and '' and are dropped,
 * brackets become -lrb- -rrb- and are kept (the list has them upper-case, the tokens are lower-cased
 * first), `!!` and `?!` are kept, `...`, `--` and single punctuation are dropped.
 *
 * Isomorphic: no Node APIs.
 */
import { PTB_RULES, type PtbRule } from './ptb-lexer-rules.ts';

/** coco-caption's `PUNCTUATIONS`: tokens dropped after PTB tokenisation. */
const COCO_PUNCTUATION: ReadonlySet<string> = new Set([
  "''",
  "'",
  '``',
  '`',
  '-LRB-',
  '-RRB-',
  '-LCB-',
  '-RCB-',
  '.',
  '?',
  '!',
  ',',
  ':',
  '-',
  '--',
  '...',
  ';',
]);

interface CompiledRule {
  rule: PtbRule;
  /** The rule and its trailing context, sticky; group 1 is the token. */
  re: RegExp;
  /** For `longest` rules: the whole pattern, to test longer candidates. */
  whole?: RegExp;
}

/** How far past a first match a `longest` rule looks for a longer one (URLs, e-mail addresses, phones). */
const LONGEST_SCAN = 200;

let compiled: CompiledRule[] | undefined;

function rules(): CompiledRule[] {
  compiled ??= PTB_RULES.map((rule) => ({
    rule,
    re: new RegExp(rule.trail ? `(${rule.pattern})(?:${rule.trail})` : `(${rule.pattern})`, 'uy'),
    ...(rule.longest ? { whole: new RegExp(`^(?:${rule.pattern})$`, 'u') } : {}),
  }));
  return compiled;
}

/** PTBLexer's `latexQuotes`: ASCII quotes by their guessed side, Unicode quotes by their shape. */
function latexQuotes(text: string, probablyLeft: boolean): string {
  let s = probablyLeft
    ? text.replace(/&apos;|'/g, '`').replace(/"|&quot;/g, '``')
    : text.replace(/&apos;|'/g, "'").replace(/"|&quot;/g, "''");
  s = s.replace(/[\u0091\u2018\u201B\u2039]/g, '`').replace(/[\u0092\u2019\u203A]/g, "'");
  return s.replace(/[\u0093\u201C\u00AB]/g, '``').replace(/[\u0094\u201D\u00BB]/g, "''");
}

/**
 * PTBTokenizer over a whole text with newlines as line ends (`-preserveLines`), tokens as printed
 * before lower-casing. Returns one token list per output line.
 *
 * Porting note: a character no rule matches is deleted (PTBLexer's default `untokenizable=firstDelete`
 * also logs the first one, which we do not).
 */
export function ptbTokenizeText(text: string): string[][] {
  const lines: string[][] = [[]];
  const emit = (tok: string) => lines[lines.length - 1]!.push(tok);
  let pos = 0;
  while (pos < text.length) {
    let best: CompiledRule | undefined;
    let bestLength = 0;
    let bestToken = '';
    for (const c of rules()) {
      c.re.lastIndex = pos;
      const m = c.re.exec(text);
      if (m === null) continue;
      // rules compete on their whole match, trailing context included (`longest` rules have none)
      const token = c.whole ? longestMatch(c.whole, text, pos, m[1]!) : m[1]!;
      const length = c.whole ? token.length : m[0].length;
      if (length > bestLength) {
        best = c;
        bestLength = length;
        bestToken = token;
      }
    }
    if (best === undefined) {
      pos += text.codePointAt(pos)! > 0xffff ? 2 : 1;
      continue;
    }
    const action = best.rule.action;
    let consumed = bestToken.length;
    switch (action.kind) {
      case 'token':
        emit(bestToken);
        break;
      case 'map':
        emit(action.to(bestToken));
        break;
      case 'quote':
        emit(latexQuotes(bestToken, action.left));
        break;
      case 'split':
        emit(bestToken.slice(0, action.keep));
        consumed = action.keep;
        break;
      case 'abbrev':
        emit(bestToken); // the period is returned again as a token of its own
        consumed -= 1;
        break;
      case 'acronym':
        if (bestToken.length === 2) emit(bestToken.slice(0, 1));
        else emit(bestToken);
        consumed -= 1;
        break;
      case 'newline':
        lines.push([]);
        break;
      case 'skip':
        break;
    }
    pos += consumed;
  }
  return lines;
}

/** The longest text at `pos` that `whole` matches entirely, at least `first` (a match already found). */
function longestMatch(whole: RegExp, text: string, pos: number, first: string): string {
  const lineEnd = text.slice(pos, pos + LONGEST_SCAN).search(/[\n\r\u2028\u2029]/u);
  const limit = pos + (lineEnd < 0 ? Math.min(LONGEST_SCAN, text.length - pos) : lineEnd);
  for (let end = limit; end > pos + first.length; end--) {
    const candidate = text.slice(pos, end);
    if (whole.test(candidate)) return candidate;
  }
  return first;
}

/**
 * coco-caption's `PTBTokenizer.tokenize` for a list of captions: joined by newlines (newlines inside a
 * caption become spaces), PTB-tokenised and lower-cased, then its punctuation dropped. Returns one
 * space-joined string per caption, as the reference does.
 *
 * Porting note: as in the reference, a caption holding another line break (\r, U+2028, U+2029, U+000B,
 * U+000C) shifts the lines of the captions after it; the reference pairs lines with captions by position.
 */
export function cocoTokenizeCaptions(captions: readonly string[]): string[] {
  if (captions.length === 0) return [];
  const lines = ptbTokenizeText(captions.map((c) => c.replaceAll('\n', ' ')).join('\n'));
  return captions.map((_, i) =>
    (lines[i] ?? [])
      .map((tok) => tok.toLowerCase())
      .filter((tok) => !COCO_PUNCTUATION.has(tok))
      .join(' '),
  );
}

/** One caption as coco-caption tokenises it (see {@link cocoTokenizeCaptions}). */
export function cocoTokenize(caption: string): string {
  return cocoTokenizeCaptions([caption])[0]!;
}
