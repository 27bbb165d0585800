/**
 * Strict parser for HTTP Structured Field Values (RFC 9651, which obsoletes RFC 8941).
 *
 * What: `parseSfList`, `parseSfDictionary` and `parseSfItem` turn a field value into typed
 * members, or return `undefined` when the value is not valid for that field type.
 * Why: the RateLimit fields are Structured Fields, and the draft says malformed fields MUST be
 * ignored, so "best effort" parsing would make us act on values the server never sent.
 *
 * The parser follows the algorithms of RFC 9651 §4.2 step by step, over a cursor into the
 * string. It accepts every bare item type (Integer, Decimal, String, Token, Byte Sequence,
 * Boolean, plus RFC 9651's Date and Display String), because a single unknown parameter type
 * must not make a whole valid field fail. Failures inside the parser throw a private error that
 * the three entry points turn into `undefined`; nothing escapes to the caller. Running time is
 * linear in the input length, and there is no recursion, so hostile input cannot blow the stack.
 */

/** A bare item: the value of an Item, a parameter, or a Dictionary member. */
export type SfBareItem =
  | { readonly type: 'integer'; readonly value: number }
  | { readonly type: 'decimal'; readonly value: number }
  | { readonly type: 'string'; readonly value: string }
  | { readonly type: 'token'; readonly value: string }
  | { readonly type: 'byte-sequence'; readonly value: Uint8Array }
  | { readonly type: 'boolean'; readonly value: boolean }
  /** RFC 9651 Date: whole seconds since the Unix epoch. */
  | { readonly type: 'date'; readonly value: number }
  | { readonly type: 'display-string'; readonly value: string };

/** Parameters of an Item or Inner List, in field order; a repeated key keeps its last value. */
export type SfParameters = ReadonlyMap<string, SfBareItem>;

/** A bare item with its parameters. */
export interface SfItem {
  readonly kind: 'item';
  readonly value: SfBareItem;
  readonly params: SfParameters;
}

/** A parenthesised list of Items, with parameters of its own. */
export interface SfInnerList {
  readonly kind: 'inner-list';
  readonly items: readonly SfItem[];
  readonly params: SfParameters;
}

/** A List field: Items and Inner Lists in field order. */
export type SfList = readonly (SfItem | SfInnerList)[];

/** A Dictionary field: members in field order; a repeated key keeps its first position and last value. */
export type SfDictionary = ReadonlyMap<string, SfItem | SfInnerList>;

/**
 * Parses a List field (RFC 9651 §4.2.1). An empty value is an empty List.
 *
 * @returns the members, or `undefined` when the value is not a valid List.
 * @example
 * ```ts
 * const list = parseSfList('"burst";q=100;w=60, "daily";q=1000');
 * list?.[0]?.kind; // 'item'
 * parseSfList('limit=100'); // undefined: '=' cannot follow a List member
 * ```
 */
export function parseSfList(input: string): SfList | undefined {
  return run(input, parseListMembers);
}

/**
 * Parses a Dictionary field (RFC 9651 §4.2.2). A key without `=` has the Boolean value true.
 *
 * @returns the members by key, or `undefined` when the value is not a valid Dictionary.
 * @example
 * ```ts
 * const dict = parseSfDictionary('limit=100, remaining=50, reset=5');
 * dict?.get('remaining'); // { kind: 'item', value: { type: 'integer', value: 50 }, params: Map {} }
 * ```
 */
export function parseSfDictionary(input: string): SfDictionary | undefined {
  return run(input, parseDictionaryMembers);
}

/**
 * Parses an Item field (RFC 9651 §4.2.3): one bare item and its parameters.
 *
 * @returns the Item, or `undefined` when the value is not a valid Item.
 * @example
 * ```ts
 * parseSfItem('7')?.value; // { type: 'integer', value: 7 }
 * parseSfItem('7, 8'); // undefined: that is a List
 * ```
 */
export function parseSfItem(input: string): SfItem | undefined {
  return run(input, parseItem);
}

// ---------------------------------------------------------------------------------------------
// Parsing machinery

/** Thrown inside the parser only; the entry points turn it into `undefined`. */
class SfSyntaxError extends Error {
  override readonly name = 'SfSyntaxError';
}

interface Cursor {
  readonly s: string;
  i: number;
}

function fail(): never {
  throw new SfSyntaxError('invalid structured field');
}

function run<T>(input: string, parse: (c: Cursor) => T): T | undefined {
  // RFC 9651 §4.2: input that is not ASCII fails outright.
  if (typeof input !== 'string' || /[^\x00-\x7f]/.test(input)) return undefined;
  const c: Cursor = { s: input, i: 0 };
  try {
    skipSp(c);
    const result = parse(c);
    skipSp(c);
    return c.i === c.s.length ? result : undefined;
  } catch (error) {
    if (error instanceof SfSyntaxError) return undefined;
    throw error;
  }
}

function peek(c: Cursor): string {
  return c.i < c.s.length ? c.s[c.i]! : '';
}

function skipSp(c: Cursor): void {
  while (c.s.charCodeAt(c.i) === 0x20) c.i++;
}

/** OWS = SP / HTAB; allowed only around the commas of Lists and Dictionaries. */
function skipOws(c: Cursor): void {
  for (;;) {
    const code = c.s.charCodeAt(c.i);
    if (code !== 0x20 && code !== 0x09) return;
    c.i++;
  }
}

const isDigit = (ch: string): boolean => ch >= '0' && ch <= '9';
const isLcAlpha = (ch: string): boolean => ch >= 'a' && ch <= 'z';
const isAlpha = (ch: string): boolean => isLcAlpha(ch) || (ch >= 'A' && ch <= 'Z');
const isKeyChar = (ch: string): boolean =>
  isLcAlpha(ch) || isDigit(ch) || ch === '_' || ch === '-' || ch === '.' || ch === '*';
// tchar (RFC 9110 §5.6.2) plus ":" and "/", which tokens may also contain.
const isTokenChar = (ch: string): boolean =>
  isAlpha(ch) || isDigit(ch) || (ch !== '' && "!#$%&'*+-.^_`|~:/".includes(ch));

/** After a member: end of input, or a comma followed by another member (no trailing comma). */
function atEndOrNextMember(c: Cursor): boolean {
  skipOws(c);
  if (c.i >= c.s.length) return true;
  if (c.s[c.i] !== ',') fail();
  c.i++;
  skipOws(c);
  if (c.i >= c.s.length) fail();
  return false;
}

function parseListMembers(c: Cursor): SfList {
  const members: (SfItem | SfInnerList)[] = [];
  if (c.i >= c.s.length) return members;
  do {
    members.push(parseItemOrInnerList(c));
  } while (!atEndOrNextMember(c));
  return members;
}

function parseDictionaryMembers(c: Cursor): SfDictionary {
  const members = new Map<string, SfItem | SfInnerList>();
  if (c.i >= c.s.length) return members;
  do {
    const key = parseKey(c);
    if (peek(c) === '=') {
      c.i++;
      members.set(key, parseItemOrInnerList(c));
    } else {
      members.set(key, { kind: 'item', value: { type: 'boolean', value: true }, params: parseParameters(c) });
    }
  } while (!atEndOrNextMember(c));
  return members;
}

function parseItemOrInnerList(c: Cursor): SfItem | SfInnerList {
  return peek(c) === '(' ? parseInnerList(c) : parseItem(c);
}

function parseInnerList(c: Cursor): SfInnerList {
  c.i++; // "("
  const items: SfItem[] = [];
  while (c.i < c.s.length) {
    skipSp(c);
    if (peek(c) === ')') {
      c.i++;
      return { kind: 'inner-list', items, params: parseParameters(c) };
    }
    items.push(parseItem(c));
    const next = peek(c);
    if (next !== ' ' && next !== ')') fail();
  }
  return fail(); // no closing parenthesis
}

function parseItem(c: Cursor): SfItem {
  const value = parseBareItem(c);
  return { kind: 'item', value, params: parseParameters(c) };
}

function parseParameters(c: Cursor): SfParameters {
  const params = new Map<string, SfBareItem>();
  while (peek(c) === ';') {
    c.i++;
    skipSp(c);
    const key = parseKey(c);
    let value: SfBareItem = { type: 'boolean', value: true };
    if (peek(c) === '=') {
      c.i++;
      value = parseBareItem(c);
    }
    params.set(key, value);
  }
  return params;
}

function parseKey(c: Cursor): string {
  const first = peek(c);
  if (!isLcAlpha(first) && first !== '*') fail();
  const start = c.i;
  while (c.i < c.s.length && isKeyChar(c.s[c.i]!)) c.i++;
  return c.s.slice(start, c.i);
}

function parseBareItem(c: Cursor): SfBareItem {
  const ch = peek(c);
  if (ch === '-' || isDigit(ch)) return parseNumber(c);
  if (ch === '"') return { type: 'string', value: parseString(c) };
  if (ch === '*' || isAlpha(ch)) return { type: 'token', value: parseToken(c) };
  if (ch === ':') return { type: 'byte-sequence', value: parseByteSequence(c) };
  if (ch === '?') return { type: 'boolean', value: parseBoolean(c) };
  if (ch === '@') return parseDate(c);
  if (ch === '%') return { type: 'display-string', value: parseDisplayString(c) };
  return fail();
}

/** RFC 9651 §4.2.4: at most 15 integer digits; decimals at most 12 + 3 digits. */
function parseNumber(c: Cursor): SfBareItem {
  let sign = 1;
  if (peek(c) === '-') {
    c.i++;
    sign = -1;
  }
  if (!isDigit(peek(c))) fail();
  const start = c.i;
  let dot = -1;
  while (c.i < c.s.length) {
    const ch = c.s[c.i]!;
    if (isDigit(ch)) {
      c.i++;
    } else if (ch === '.' && dot === -1) {
      if (c.i - start > 12) fail();
      dot = c.i;
      c.i++;
    } else {
      break;
    }
    // Checked as we go, so an endless run of digits fails early.
    if (dot === -1 ? c.i - start > 15 : c.i - start > 16) fail();
  }
  const text = c.s.slice(start, c.i);
  if (dot === -1) return { type: 'integer', value: sign * Number(text) + 0 }; // "+ 0" turns -0 into 0
  const fractionDigits = c.i - dot - 1;
  if (fractionDigits === 0 || fractionDigits > 3) fail();
  return { type: 'decimal', value: sign * Number(text) + 0 };
}

function parseString(c: Cursor): string {
  c.i++; // DQUOTE
  let out = '';
  let runStart = c.i;
  while (c.i < c.s.length) {
    const code = c.s.charCodeAt(c.i);
    if (code === 0x5c) {
      // Only \" and \\ are escapes; anything else after a backslash is malformed.
      const next = c.s[c.i + 1];
      if (next !== '"' && next !== '\\') fail();
      out += c.s.slice(runStart, c.i) + next;
      c.i += 2;
      runStart = c.i;
    } else if (code === 0x22) {
      out += c.s.slice(runStart, c.i);
      c.i++;
      return out;
    } else if (code < 0x20 || code > 0x7e) {
      fail();
    } else {
      c.i++;
    }
  }
  return fail(); // unterminated
}

function parseToken(c: Cursor): string {
  const start = c.i;
  c.i++; // first character already checked by the caller
  while (c.i < c.s.length && isTokenChar(c.s[c.i]!)) c.i++;
  return c.s.slice(start, c.i);
}

function parseByteSequence(c: Cursor): Uint8Array {
  const end = c.s.indexOf(':', c.i + 1);
  if (end === -1) fail();
  const b64 = c.s.slice(c.i + 1, end);
  c.i = end + 1;
  if (!/^[A-Za-z0-9+/=]*$/.test(b64)) fail();
  // atob implements "forgiving base64": padding may be omitted, stray "=" fails (RFC 9651 §4.2.7).
  let binary: string;
  try {
    binary = atob(b64);
  } catch {
    return fail();
  }
  const bytes = new Uint8Array(binary.length);
  for (let k = 0; k < binary.length; k++) bytes[k] = binary.charCodeAt(k);
  return bytes;
}

function parseBoolean(c: Cursor): boolean {
  c.i++; // "?"
  const ch = peek(c);
  if (ch !== '0' && ch !== '1') fail();
  c.i++;
  return ch === '1';
}

function parseDate(c: Cursor): SfBareItem {
  c.i++; // "@"
  const n = parseNumber(c);
  if (n.type !== 'integer') fail();
  return { type: 'date', value: n.value };
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function parseDisplayString(c: Cursor): string {
  c.i++; // "%"
  if (peek(c) !== '"') fail();
  c.i++;
  const bytes: number[] = [];
  while (c.i < c.s.length) {
    const code = c.s.charCodeAt(c.i++);
    if (code < 0x20 || code > 0x7e) fail();
    if (code === 0x25) {
      // Only lowercase hex is allowed after "%".
      const hex = c.s.slice(c.i, c.i + 2);
      if (!/^[0-9a-f]{2}$/.test(hex)) fail();
      bytes.push(parseInt(hex, 16));
      c.i += 2;
    } else if (code === 0x22) {
      try {
        return utf8.decode(new Uint8Array(bytes));
      } catch {
        return fail();
      }
    } else {
      bytes.push(code);
    }
  }
  return fail(); // unterminated
}
