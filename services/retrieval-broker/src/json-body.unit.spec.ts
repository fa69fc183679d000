import { describe, expect, it } from 'vitest';
import { suspiciousKey } from './json-body.ts';

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
