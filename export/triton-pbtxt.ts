/**
 * Protobuf text format, the subset Triton's config.pbtxt needs: scalar fields (strings, numbers,
 * enum identifiers), nested messages `name { ... }`, and lists `name [ ... ]` of scalars or
 * messages. {@link formatPbtxt} writes it; {@link parsePbtxt} reads back what it writes (and
 * hand-written configs in the same subset), so tests can check a written config field by field.
 */

/** An enum value, written bare (`TYPE_FP32`), unlike a string (`"TYPE_FP32"`). */
export interface PbEnum {
  enum: string;
}

/** A text-format value. Arrays are lists; plain objects are messages. */
export type PbValue = string | number | boolean | PbEnum | PbValue[] | PbMessage;
export interface PbMessage {
  [field: string]: PbValue;
}

/** An enum value for {@link formatPbtxt}. */
export function pbEnum(name: string): PbEnum {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`'${name}' is not an enum identifier`);
  return { enum: name };
}

function isEnum(v: PbValue): v is PbEnum {
  return (
    typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 1 && typeof (v as PbEnum).enum === 'string'
  );
}

function isMessage(v: PbValue): v is PbMessage {
  return typeof v === 'object' && !Array.isArray(v) && !isEnum(v);
}

function scalar(v: PbValue): string {
  if (typeof v === 'string') return JSON.stringify(v); // JSON's escapes are valid text-format escapes for what we write
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error(`pbtxt cannot hold ${v}`);
    return String(v);
  }
  if (typeof v === 'boolean') return String(v);
  if (isEnum(v)) return v.enum;
  throw new Error('not a scalar');
}

function formatMessage(msg: PbMessage, indent: string): string[] {
  const lines: string[] = [];
  for (const [key, value] of Object.entries(msg)) {
    if (Array.isArray(value)) {
      if (value.length > 0 && value.every(isMessage)) {
        lines.push(`${indent}${key} [`);
        value.forEach((m, i) => {
          lines.push(
            `${indent}  {`,
            ...formatMessage(m as PbMessage, `${indent}    `),
            `${indent}  }${i < value.length - 1 ? ',' : ''}`,
          );
        });
        lines.push(`${indent}]`);
      } else {
        lines.push(
          value.length === 0 ? `${indent}${key}: [ ]` : `${indent}${key}: [ ${value.map(scalar).join(', ')} ]`,
        );
      }
    } else if (isMessage(value)) {
      lines.push(`${indent}${key} {`, ...formatMessage(value, `${indent}  `), `${indent}}`);
    } else {
      lines.push(`${indent}${key}: ${scalar(value)}`);
    }
  }
  return lines;
}

/** Writes a message in text format, Triton's layout (two-space indents, lists of messages in `[ { }, { } ]`). */
export function formatPbtxt(msg: PbMessage): string {
  return `${formatMessage(msg, '').join('\n')}\n`;
}

type Token = { kind: 'punct'; text: string } | { kind: 'string'; text: string } | { kind: 'word'; text: string };

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '#') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if ('{}[]:,'.includes(c)) {
      tokens.push({ kind: 'punct', text: c });
      i++;
    } else if (c === '"') {
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (j >= text.length) throw new Error(`pbtxt: unterminated string at offset ${i}`);
      tokens.push({ kind: 'string', text: JSON.parse(text.slice(i, j + 1)) as string });
      i = j + 1;
    } else {
      const m = /^[A-Za-z0-9_.+-]+/.exec(text.slice(i));
      if (!m) throw new Error(`pbtxt: unexpected '${c}' at offset ${i}`);
      tokens.push({ kind: 'word', text: m[0] });
      i += m[0].length;
    }
  }
  return tokens;
}

/**
 * Parses the subset {@link formatPbtxt} writes. A field given more than once (text format's way of
 * writing a repeated field) becomes a list. Numbers become numbers, `true`/`false` booleans, other
 * bare words {@link PbEnum}s.
 * @throws Error naming the offending token on anything outside the subset
 */
export function parsePbtxt(text: string): PbMessage {
  const tokens = tokenize(text);
  let pos = 0;
  const peek = () => tokens[pos];
  const expect = (p: string) => {
    const t = tokens[pos++];
    if (!t || t.kind !== 'punct' || t.text !== p)
      throw new Error(`pbtxt: expected '${p}', got ${t ? `'${t.text}'` : 'end of input'}`);
  };
  const isPunct = (p: string) => peek()?.kind === 'punct' && peek()!.text === p;
  const asList = (v: PbValue): PbValue[] => (Array.isArray(v) ? v : [v]);

  function parseScalar(): PbValue {
    const t = tokens[pos++];
    if (!t || t.kind === 'punct') throw new Error(`pbtxt: expected a value, got ${t ? `'${t.text}'` : 'end of input'}`);
    if (t.kind === 'string') return t.text;
    if (/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t.text)) return Number(t.text);
    if (t.text === 'true' || t.text === 'false') return t.text === 'true';
    return pbEnum(t.text);
  }

  function parseValue(): PbValue {
    if (isPunct('{')) {
      expect('{');
      return parseFields('}');
    }
    return parseScalar();
  }

  function parseFields(end: '}' | null): PbMessage {
    const msg: PbMessage = {};
    for (;;) {
      if (end === null ? pos >= tokens.length : isPunct(end)) break;
      const key = tokens[pos++];
      if (!key || key.kind !== 'word')
        throw new Error(`pbtxt: expected a field name, got ${key ? `'${key.text}'` : 'end of input'}`);
      if (isPunct(':')) expect(':');
      let value: PbValue;
      if (isPunct('[')) {
        expect('[');
        const list: PbValue[] = [];
        while (!isPunct(']')) {
          list.push(parseValue());
          if (isPunct(',')) expect(',');
        }
        expect(']');
        value = list;
      } else {
        value = parseValue();
      }
      const prev = msg[key.text];
      if (prev === undefined) msg[key.text] = value;
      else msg[key.text] = [...asList(prev), ...asList(value)];
      if (isPunct(',')) expect(',');
    }
    if (end !== null) expect(end);
    return msg;
  }

  return parseFields(null);
}
