/**
 * A model card's JSON, read as hostile input before any schema sees it. The card file is bounded in bytes
 * (model-files.ts), but 8 MiB of JSON can still be 600,000 `files` entries (every one listed by `/readyz` and
 * `/v1/models`), an 8 MB string in `config` (returned by every `GET /v1/models`), or a million nested arrays (which
 * overflow the stack of whatever walks them). So its nesting is bounded before it is parsed, and every string,
 * every object's entries and `config` as a whole after, each refusal naming the field. A vocabulary's token list
 * is the one part that is long by nature: arrays are bounded only by the file's bytes.
 */

export const CARD_BOUNDS = {
  /** Levels of nested objects and arrays (a card has 5). */
  depth: 32,
  /** Characters in any string or key (a token, a file name, a config value). */
  stringChars: 4096,
  /** Entries of any object (`files` has a handful, `config` a few dozen). */
  entries: 256,
  /** `config` as JSON: the training settings, shown by every `GET /v1/models`. */
  configBytes: 64 * 1024,
} as const;

/**
 * Parses card text, refusing one whose shape is out of {@link CARD_BOUNDS}.
 * @throws Error naming `where`, and the field at fault with its size and the limit
 */
export function parseCardJson(text: string, where: string): unknown {
  if (nestedDeeperThan(text, CARD_BOUNDS.depth))
    throw new Error(`${where}: not a model card (nested deeper than ${CARD_BOUNDS.depth} levels)`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`${where}: not a model card (invalid JSON: ${(err as Error).message})`, { cause: err });
  }
  const over = outOfBounds(json, '(root)');
  if (over) throw new Error(`${where}: not a valid model card (${over})`);
  const config = (json as { config?: unknown } | null)?.config;
  const configBytes = config === undefined ? 0 : JSON.stringify(config).length;
  if (configBytes > CARD_BOUNDS.configBytes)
    throw new Error(
      `${where}: not a valid model card (config: ${configBytes} bytes of JSON, over the limit of ${CARD_BOUNDS.configBytes})`,
    );
  return json;
}

/** Whether brackets outside strings nest deeper than `limit`: one pass, stopping at the first level past it. */
function nestedDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return false;
}

/** The first string or object of `value` past its bound, described with its path; undefined when none is. */
function outOfBounds(value: unknown, path: string): string | undefined {
  const { stringChars, entries } = CARD_BOUNDS;
  if (typeof value === 'string')
    return value.length > stringChars
      ? `${path}: a string of ${value.length} characters, over the limit of ${stringChars}`
      : undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const over = outOfBounds(value[i], `${path}[${i}]`);
      if (over) return over;
    }
    return undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  const keys = Object.keys(value);
  if (keys.length > entries) return `${path}: ${keys.length} entries, over the limit of ${entries}`;
  for (const key of keys) {
    const at = path === '(root)' ? key : `${path}.${key}`;
    if (key.length > stringChars) return `${path}: a key of ${key.length} characters, over the limit of ${stringChars}`;
    const over = outOfBounds((value as Record<string, unknown>)[key], at);
    if (over) return over;
  }
  return undefined;
}
