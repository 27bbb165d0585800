/**
 * Strict parser for HTTP Structured Field Values (RFC 9651, which obsoletes RFC 8941).
 *
 * What: `parseSfList`, `parseSfDictionary` and `parseSfItem` turn a field value into typed
 * members, or return `undefined` when the value is not valid for that field type.
 * Why: the RateLimit fields are Structured Fields, and the draft says malformed fields MUST be
 * ignored, so "best effort" parsing would make us act on values the server never sent.
 *
 * The parser follows the algorithms of RFC 9651 §4.2 step by step, over a cursor into the
 * string; each bare item and key is one sticky regular expression written from the RFC's ABNF
 * (the grammar is small and regular, and one pattern per rule keeps the code as short as the
 * grammar). It accepts every bare item type (Integer, Decimal, String, Token, Byte Sequence,
 * Boolean, plus RFC 9651's Date and Display String), because a single unknown parameter type
 * must not make a whole valid field fail. Any failure inside the parser throws, and the three
 * entry points turn that into `undefined`; nothing escapes to the caller. Running time is linear
 * in the input length (no pattern backtracks: each alternative starts with a different
 * character), and there is no recursion, so hostile input cannot blow the stack.
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
 * Parses a List field (RFC 9651 §4.2.1). An empty value is an empty List; an absent one (`null`,
 * as `Headers.get` returns it) is no List.
 *
 * @returns the members, or `undefined` when the value is not a valid List.
 * @example
 * ```ts
 * const list = parseSfList('"burst";q=100;w=60, "daily";q=1000');
 * list?.[0]?.kind; // 'item'
 * parseSfList('limit=100'); // undefined: '=' cannot follow a List member
 * ```
 */
export function parseSfList(input: string | null): SfList | undefined {
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
export function parseSfDictionary(input: string | null): SfDictionary | undefined {
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
export function parseSfItem(input: string | null): SfItem | undefined {
  return run(input, parseItem);
}

// ---------------------------------------------------------------------------------------------
// Parsing machinery

// The input and the cursor into it. Module state rather than an object passed around: parsing is
// synchronous and never re-entered, and this keeps the parser small (it ships in every bundle).
let s = '';
let i = 0;

/** Any throw inside the parser means "invalid"; `run` turns it into `undefined`. */
function fail(): never {
  throw 0;
}

function run<T>(input: string | null, parse: () => T): T | undefined {
  // RFC 9651 §4.2: input that is not ASCII fails outright.
  if (typeof input !== 'string' || /[^\x00-\x7f]/.test(input)) return undefined;
  s = input;
  i = 0;
  try {
    eat(SP);
    const result = parse();
    eat(SP);
    return i === s.length ? result : undefined;
  } catch {
    // fail(), a base64 error from atob or a UTF-8 error from decodeURIComponent: all mean malformed.
    return undefined;
  }
}

/** Matches the sticky `re` at the cursor and moves past it; no match fails the parse. */
function eat(re: RegExp): RegExpExecArray {
  re.lastIndex = i;
  const m = re.exec(s) ?? fail();
  i = re.lastIndex;
  return m;
}

const SP = / */y;
/** OWS = SP / HTAB; allowed only around the commas of Lists and Dictionaries. */
const OWS = /[ \t]*/y;
const KEY = /[a-z*][a-z\d_.*-]*/y;
// RFC 9651 §4.2.4: at most 15 integer digits; decimals at most 12 + 3 digits (checked in `number`).
const NUMBER = /-?(\d+)(\.\d*)?/y;
// Printable ASCII but `"` and `\`, or the two escapes `\"` and `\\`.
const STRING = /"((?:[ !#-[\]-~]|\\["\\])*)"/y;
// tchar (RFC 9110 §5.6.2) plus ":" and "/", after an ALPHA or "*".
const TOKEN = /[a-zA-Z*][\w!#$%&'*+.^`|~:/-]*/y;
const BYTES = /:([A-Za-z\d+/=]*):/y;
const BOOLEAN = /\?([01])/y;
// Printable ASCII but `"` and `%`, or "%" and two lowercase hex digits.
const DISPLAY = /%"((?:[ !#$&-~]|%[\da-f]{2})*)"/y;

const at = (ch: string): boolean => s[i] === ch && ++i > 0;

/** After a member: end of input, or a comma followed by another member (no trailing comma). */
function atEndOrNextMember(): boolean {
  eat(OWS);
  if (i >= s.length) return true;
  if (!at(',')) fail();
  eat(OWS);
  if (i >= s.length) fail();
  return false;
}

function parseListMembers(): SfList {
  const members: (SfItem | SfInnerList)[] = [];
  if (i < s.length) do members.push(parseItemOrInnerList()); while (!atEndOrNextMember());
  return members;
}

function parseDictionaryMembers(): SfDictionary {
  const members = new Map<string, SfItem | SfInnerList>();
  if (i < s.length) {
    do {
      const key = eat(KEY)[0];
      members.set(key, at('=') ? parseItemOrInnerList() : { kind: 'item', value: TRUE, params: parseParameters() });
    } while (!atEndOrNextMember());
  }
  return members;
}

const TRUE: SfBareItem = { type: 'boolean', value: true };

function parseItemOrInnerList(): SfItem | SfInnerList {
  if (!at('(')) return parseItem();
  const items: SfItem[] = [];
  for (;;) {
    eat(SP);
    if (at(')')) return { kind: 'inner-list', items, params: parseParameters() };
    items.push(parseItem());
    if (s[i] !== ' ' && s[i] !== ')') fail(); // also fails at the end: no closing parenthesis
  }
}

function parseItem(): SfItem {
  const value = parseBareItem();
  return { kind: 'item', value, params: parseParameters() };
}

function parseParameters(): SfParameters {
  const params = new Map<string, SfBareItem>();
  while (at(';')) {
    eat(SP);
    const key = eat(KEY)[0];
    params.set(key, at('=') ? parseBareItem() : TRUE);
  }
  return params;
}

function parseBareItem(): SfBareItem {
  const ch = s[i];
  if (ch === '"') return { type: 'string', value: eat(STRING)[1]!.replace(/\\(.)/g, '$1') };
  if (ch === ':') {
    const binary = atob(eat(BYTES)[1]!); // forgiving base64: padding may be omitted, a stray "=" throws
    return { type: 'byte-sequence', value: Uint8Array.from(binary, (b) => b.charCodeAt(0)) };
  }
  if (ch === '?') return { type: 'boolean', value: eat(BOOLEAN)[1] === '1' };
  if (ch === '@') {
    i++;
    const n = parseNumber();
    return n.type === 'integer' ? { type: 'date', value: n.value } : fail();
  }
  // decodeURIComponent decodes UTF-8 strictly (it throws on invalid sequences), as RFC 9651 §4.2.10 asks.
  if (ch === '%') return { type: 'display-string', value: decodeURIComponent(eat(DISPLAY)[1]!) };
  if (ch === '-' || (ch! >= '0' && ch! <= '9')) return parseNumber();
  return { type: 'token', value: eat(TOKEN)[0] };
}

function parseNumber(): SfBareItem {
  const m = eat(NUMBER);
  const whole = m[1]!.length;
  const fraction = m[2]?.length;
  // fraction counts the ".": 2-4 means 1-3 digits.
  if (fraction === undefined ? whole > 15 : whole > 12 || fraction < 2 || fraction > 4) fail();
  // "+ 0" turns -0 into 0
  return { type: fraction === undefined ? 'integer' : 'decimal', value: Number(m[0]) + 0 };
}
