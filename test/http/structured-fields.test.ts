import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  parseSfDictionary,
  parseSfItem,
  parseSfList,
  type SfBareItem,
  type SfInnerList,
  type SfItem,
} from '../../src/http/structured-fields.ts';
import { Reach } from '../reach.ts';

/** Compact view of a member for readable expectations: [bare value, { params }]. */
function view(member: SfItem | SfInnerList | undefined): unknown {
  if (member === undefined) return undefined;
  const params = Object.fromEntries([...member.params].map(([k, v]) => [k, bare(v)]));
  return member.kind === 'item' ? [bare(member.value), params] : [member.items.map(view), params];
}

function bare(item: SfBareItem): unknown {
  if (item.type === 'byte-sequence') return { bytes: [...item.value] };
  if (item.type === 'token' || item.type === 'date' || item.type === 'display-string') return { [item.type]: item.value };
  return item.value;
}

const bytes = (text: string): number[] => [...new TextEncoder().encode(text)];

describe('parseSfList()', () => {
  test('reads the draft-10 RateLimit-Policy example as two String items with Integer parameters', () => {
    const list = parseSfList('"burst";q=100;w=60,"daily";q=1000;w=86400');
    expect(list?.map(view)).toEqual([
      ['burst', { q: 100, w: 60 }],
      ['daily', { q: 1000, w: 86400 }],
    ]);
  });

  test('decodes a partition key Byte Sequence, including one without "=" padding', () => {
    expect(view(parseSfList('"default";r=999;pk=:dHJpYWwxMjEzMjM=:')?.[0])).toEqual([
      'default',
      { r: 999, pk: { bytes: bytes('trial121323') } },
    ]);
    expect(view(parseSfList('"x";pk=:aGk:')?.[0])).toEqual(['x', { pk: { bytes: bytes('hi') } }]);
  });

  test('reads an empty field as an empty List', () => {
    expect(parseSfList('')).toEqual([]);
    expect(parseSfList('   ')).toEqual([]);
  });

  test('reads Inner Lists with their own parameters', () => {
    expect(parseSfList('("a" "b");lvl=5, (1 2), ()')?.map(view)).toEqual([
      [[['a', {}], ['b', {}]], { lvl: 5 }],
      [[[1, {}], [2, {}]], {}],
      [[], {}],
    ]);
  });

  test('allows spaces and tabs around commas, and spaces (only) at both ends', () => {
    expect(parseSfList('  1 ,\t2,3  ')?.map(view)).toEqual([[1, {}], [2, {}], [3, {}]]);
    expect(parseSfList('\t1')).toBeUndefined();
  });

  test('reads the combined value of a field sent on several lines (joined with ", ")', () => {
    const combined = ['"sliding";q=100;w=60;burst=1000', '"fixed";q=5000;w=3600;burst=0'].join(', ');
    expect(parseSfList(combined)?.map(view)).toEqual([
      ['sliding', { q: 100, w: 60, burst: 1000 }],
      ['fixed', { q: 5000, w: 3600, burst: 0 }],
    ]);
  });

  test.each([
    ['a trailing comma', '1, 2,'],
    ['a leading comma', ', 1'],
    ['an empty member', '1,,2'],
    ['a Dictionary (draft-07 RateLimit)', 'limit=100, remaining=50, reset=5'],
    ['an unterminated String', '"default;r=1'],
    ['an unterminated Inner List', '(1 2'],
    ['Inner List items separated by a comma', '(1,2)'],
    ['Inner List items not separated at all', '(1"a")'],
    ['an empty parameter key', '1;=2'],
    ['an uppercase parameter key', '1;R=2'],
    ['a parameter without a key', '1;'],
    ['a non-ASCII character', '"caf\u00e9"'],
    ['a semicolon-injected garbage tail', '"a";r=1;;t=2'],
    ['an injected quote', '"a"b";r=1'],
    ['a space instead of a comma', '1 2'],
  ])('rejects %s', (_name, input) => {
    expect(parseSfList(input)).toBeUndefined();
  });
});

describe('parseSfDictionary()', () => {
  test('reads the draft-07 RateLimit example', () => {
    const dict = parseSfDictionary('limit=100, remaining=50, reset=5');
    expect([...(dict ?? [])].map(([key, member]) => [key, view(member)])).toEqual([
      ['limit', [100, {}]],
      ['remaining', [50, {}]],
      ['reset', [5, {}]],
    ]);
  });

  test('gives a key without "=" the value true, keeping its parameters', () => {
    expect(view(parseSfDictionary('a, b;x=1')?.get('b'))).toEqual([true, { x: 1 }]);
  });

  test('keeps the first position and the last value of a repeated key', () => {
    const dict = parseSfDictionary('a=1, b=2, a=3');
    expect([...(dict ?? [])].map(([key, member]) => [key, view(member)])).toEqual([
      ['a', [3, {}]],
      ['b', [2, {}]],
    ]);
  });

  test('accepts Inner List members', () => {
    expect(view(parseSfDictionary('a=(1 2);q=1')?.get('a'))).toEqual([[[1, {}], [2, {}]], { q: 1 }]);
  });

  test.each([
    ['an uppercase key', 'Limit=100'],
    ['a key starting with a digit', '1a=1'],
    ['a draft-10 List', '"default";r=50;t=30'],
    ['a missing value after "="', 'a='],
    ['a trailing comma', 'a=1,'],
    ['a key starting with "-"', '-a=1'],
  ])('rejects %s', (_name, input) => {
    expect(parseSfDictionary(input)).toBeUndefined();
  });
});

describe('parseSfItem()', () => {
  test.each<[string, string, unknown]>([
    ['an Integer', '42', 42],
    ['a negative Integer', '-42', -42],
    ['an Integer with leading zeros', '007', 7],
    ['the largest Integer (15 digits)', '999999999999999', 999_999_999_999_999],
    ['the smallest Integer', '-999999999999999', -999_999_999_999_999],
    ['a Decimal', '4.5', 4.5],
    ['a negative Decimal with three fraction digits', '-0.125', -0.125],
    ['the longest Decimal (12 + 3 digits)', '123456789012.123', 123_456_789_012.123],
    ['a String with escapes', '"say \\"hi\\" \\\\ bye"', 'say "hi" \\ bye'],
    ['an empty String', '""', ''],
    ['a Token with ":" and "/"', 'text/html:x', { token: 'text/html:x' }],
    ['a Token starting with "*"', '*foo', { token: '*foo' }],
    ['a Byte Sequence', ':aGVsbG8=:', { bytes: bytes('hello') }],
    ['an empty Byte Sequence', '::', { bytes: [] }],
    ['Boolean true', '?1', true],
    ['Boolean false', '?0', false],
    ['an RFC 9651 Date', '@1659578233', { date: 1659578233 }],
    ['an RFC 9651 Display String', '%"f%c3%bc%c3%bc"', { 'display-string': 'füü' }],
  ])('reads %s', (_name, input, expected) => {
    expect(view(parseSfItem(input))).toEqual([expected, {}]);
  });

  test('reads "-0" as 0, not -0', () => {
    expect(Object.is(parseSfItem('-0')?.value.value, 0)).toBe(true);
  });

  test('keeps the last value of a repeated parameter', () => {
    expect(view(parseSfItem('1;a=1;b;a=2'))).toEqual([1, { a: 2, b: true }]);
  });

  test.each([
    ['an Integer of 16 digits', '1234567890123456'],
    ['a Decimal with 13 integer digits', '1234567890123.1'],
    ['a Decimal with 4 fraction digits', '1.2345'],
    ['a Decimal ending in "."', '1.'],
    ['a Decimal starting with "."', '.5'],
    ['a lone minus sign', '-'],
    ['a plus sign', '+1'],
    ['an exponent', '1e3'],
    ['hexadecimal', '0x10'],
    ['an unknown escape in a String', '"a\\nb"'],
    ['a control character in a String', '"a\tb"'],
    ['DEL in a String', '"a\u007fb"'],
    ['a Byte Sequence with an invalid character', ':aGVs*G8=:'],
    ['a Byte Sequence with padding in the middle', ':aG=sbG8:'],
    ['a Byte Sequence with a space inside (atob would strip it)', ':aGVs bG8=:'],
    ['an unterminated Byte Sequence', ':aGVsbG8='],
    ['a Boolean other than ?0/?1', '?2'],
    ['a Date with a fraction', '@1.5'],
    ['a Display String with uppercase hex', '%"%C3%BC"'],
    ['a Display String that is not UTF-8', '%"%c3"'],
    ['a Display String without quotes', '%abc'],
    ['a Display String with a control character', '%"a\tb"'],
    ['a List', '1, 2'],
    ['an empty value', ''],
    ['a trailing space before a parameter', '1 ;a=1'],
  ])('rejects %s', (_name, input) => {
    expect(parseSfItem(input)).toBeUndefined();
  });

  test('rejects a long run of digits quickly instead of parsing it', () => {
    expect(parseSfItem('9'.repeat(1_000_000))).toBeUndefined();
  });
});

describe('properties', () => {
  const sfAlphabet = fc.constantFrom(...'abz09*-_.:;=,()"\\?@%/ \t+ABCé'.split(''));

  // Well-formed members (every bare item type, with parameters, inner lists), alone or as lists and
  // dictionaries, whole or with one character changed: inputs that reach past the first check.
  const key = fc.stringMatching(/^[a-z*][a-z0-9_.*-]{0,5}$/);
  const bareItem = fc.oneof(
    fc.integer({ min: -999_999_999_999_999, max: 999_999_999_999_999 }).map(String),
    fc.tuple(fc.integer({ min: -999_999_999_999, max: 999_999_999_999 }), fc.nat({ max: 999 })).map(([i, f]) => `${i}.${f}`),
    fc.string({ unit: fc.constantFrom(...'ab "\\'.split('')), maxLength: 8 }).map((t) => `"${t.replace(/[\\"]/g, (c) => `\\${c}`)}"`),
    fc.stringMatching(/^[A-Za-z*][A-Za-z0-9:/!#$%&'*+.^_`|~-]{0,6}$/),
    fc.uint8Array({ maxLength: 9 }).map((b) => `:${btoa(String.fromCharCode(...b))}:`),
    fc.constantFrom('?1', '?0', '@1700000000'),
  );
  const params = fc.array(fc.tuple(key, fc.option(bareItem)), { maxLength: 2 })
    .map((ps) => ps.map(([k, v]) => (v === null ? `;${k}` : `;${k}=${v}`)).join(''));
  const member = fc.oneof(
    { weight: 3, arbitrary: fc.tuple(bareItem, params).map(([b, p]) => b + p) },
    { weight: 1, arbitrary: fc.tuple(fc.array(fc.tuple(bareItem, params).map(([b, p]) => b + p), { maxLength: 3 }), params).map(([m, p]) => `(${m.join(' ')})${p}`) },
  );
  const wellFormed = fc.oneof(
    member,
    fc.array(member, { minLength: 1, maxLength: 4 }).map((ms) => ms.join(', ')),
    fc.array(fc.tuple(key, member), { minLength: 1, maxLength: 4 }).map((ms) => ms.map(([k, m]) => `${k}=${m}`).join(', ')),
  );
  const damaged = fc.tuple(wellFormed, fc.nat(), sfAlphabet)
    .map(([text, at, c]) => { const i = at % (text.length + 1); return text.slice(0, i) + c + text.slice(i + 1); });

  test('the parsers never throw and return undefined or the right shape, whatever the input', () => {
    const reach = new Reach('structured fields');
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary' }), fc.string({ unit: sfAlphabet, maxLength: 60 }), wellFormed, damaged), (input) => {
        reach.run();
        const list = parseSfList(input);
        const dict = parseSfDictionary(input);
        const item = parseSfItem(input);
        expect(list === undefined || Array.isArray(list)).toBe(true);
        expect(dict === undefined || dict instanceof Map).toBe(true);
        expect(item === undefined || item.kind === 'item').toBe(true);
        reach.hit('a non-empty list', list !== undefined && list.length > 0);
        reach.hit('a non-empty dictionary', dict !== undefined && dict.size > 0);
        reach.hit('an item', item !== undefined);
        reach.hit('rejected as a list', list === undefined);
      }),
      { numRuns: 2000 },
    );
    reach.atLeast({ 'a non-empty list': 300, 'a non-empty dictionary': 100, 'an item': 100, 'rejected as a list': 300 });
  });

  test('every Integer in range round-trips exactly', () => {
    fc.assert(
      fc.property(fc.integer({ min: -999_999_999_999_999, max: 999_999_999_999_999 }), (n) => {
        expect(parseSfItem(String(n))?.value).toEqual({ type: 'integer', value: n + 0 });
      }),
    );
  });

  test('every Byte Sequence round-trips through base64', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), (data) => {
        const b64 = btoa(String.fromCharCode(...data));
        expect(parseSfItem(`:${b64}:`)?.value).toEqual({ type: 'byte-sequence', value: data });
      }),
    );
  });

  test('a serialised list of named service limits parses back to the same names and values', () => {
    const name = fc.string({ unit: fc.constantFrom(...'abc XYZ-_"\\'.split('')), maxLength: 12 });
    const limit = fc.record({ name, r: fc.nat(), t: fc.nat({ max: 86_400 }) });
    const reach = new Reach('service limits');
    fc.assert(
      fc.property(fc.array(limit, { maxLength: 8 }), (limits) => {
        reach.hit('several limits', limits.length > 1);
        reach.hit('a name that needs escapes', limits.some((l) => /["\\]/.test(l.name)));
        const quote = (s: string) => `"${s.replace(/[\\"]/g, (ch) => `\\${ch}`)}"`;
        const field = limits.map((l) => `${quote(l.name)};r=${l.r};t=${l.t}`).join(', ');
        expect(parseSfList(field)?.map(view)).toEqual(limits.map((l) => [l.name, { r: l.r, t: l.t }]));
      }),
    );
    reach.atLeast({ 'several limits': 30, 'a name that needs escapes': 30 });
  });
});
