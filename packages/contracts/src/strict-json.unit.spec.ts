import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, readStrictJson, suspiciousKey } from './strict-json.ts';

describe('suspiciousKey', () => {
  it('finds a key named twice in any object, at any depth, also through an escape', () => {
    expect(suspiciousKey('{"a":1,"a":2}')).toEqual({ key: 'a', kind: 'duplicate' });
    expect(suspiciousKey('{"x":[{"b":1},{"c":{"d":1,"d":2}}]}')).toEqual({ key: 'd', kind: 'duplicate' });
    expect(suspiciousKey('{"trust":"untrusted","\\u0074rust":"trusted"}')).toEqual({ key: 'trust', kind: 'duplicate' });
  });

  it('keeps sibling objects apart and reads strings as strings, whatever braces or quotes they hold', () => {
    expect(suspiciousKey('[{"a":1},{"a":2}]')).toBeUndefined();
    expect(suspiciousKey('{"a":{"k":1},"b":{"k":2}}')).toBeUndefined();
    expect(suspiciousKey('{"content":"{\\"a\\":1,\\"a\\":2}","a":"[,\\"a\\":"}')).toBeUndefined();
    expect(suspiciousKey('{"list":["a","a"],"a":1}')).toBeUndefined();
  });

  it('finds keys that would reach a prototype', () => {
    expect(suspiciousKey('{"a":{"__proto__":{"x":1}}}')).toEqual({ key: '__proto__', kind: 'prototype' });
    expect(suspiciousKey('{"constructor":{"prototype":{"x":1}}}')).toEqual({ key: 'prototype', kind: 'prototype' });
    expect(suspiciousKey('{"constructor":"x","prototype":1}')).toBeUndefined();
  });
});

describe('readStrictJson', () => {
  const read = (text: string | Uint8Array) => readStrictJson(typeof text === 'string' ? new TextEncoder().encode(text) : text);

  it('reads JSON exactly as sent', () => {
    expect(read('{"content":"Café","n":[1,{"a":null}]}')).toEqual({ value: { content: 'Café', n: [1, { a: null }] } });
    // A surrogate pair escaped is one character, and well-formed.
    expect(read('{"c":"\\ud83d\\ude00"}')).toEqual({ value: { c: '😀' } });
  });

  it('refuses JSON nested deeper than MAX_JSON_DEPTH before parsing it, so no walk of it overflows the stack', () => {
    const nested = (depth: number) => `{"a":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;
    expect(read(nested(MAX_JSON_DEPTH))).toHaveProperty('value');
    expect(read(nested(MAX_JSON_DEPTH + 1))).toEqual({ refused: 'too_deep' });
    expect(read(nested(100_000))).toEqual({ refused: 'too_deep' });
    // Brackets inside strings, escaped quotes included, are text, not nesting.
    expect(read(JSON.stringify({ text: `\"${'['.repeat(1_000)}` }))).toHaveProperty('value');
  });

  it('refuses what JSON.parse would change, saying which', () => {
    expect(read(Uint8Array.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]))).toEqual({ refused: 'not_utf8' });
    expect(read('{"c":"Caf\\ud800"}')).toEqual({ refused: 'lone_surrogate' });
    expect(read('{"\\udc00":1}')).toEqual({ refused: 'lone_surrogate' });
    expect(read('{"trust":"untrusted","trust":"trusted"}')).toEqual({ refused: 'duplicate_key' });
    expect(read('{"__proto__":{"x":1}}')).toEqual({ refused: 'prototype_key' });
    expect(read('{"a":')).toEqual({ refused: 'not_json' });
  });
});
