/**
 * JSON read exactly as sent, or refused (design §5.1; no input is silently reinterpreted).
 * JSON.parse alone would accept, and change, four kinds of input: invalid UTF-8 (decoded to
 * U+FFFD), an escaped lone surrogate (no Unicode text holds it; stored, it becomes U+FFFD), a key
 * named twice (the last one wins: `"trust":"untrusted","trust":"trusted"`), and keys that reach
 * an object prototype. The HTTP edge and the Kafka codec (memory.ingest) both read with this.
 * JSON nested deeper than MAX_JSON_DEPTH is refused before it is parsed: every walk of a parsed
 * value (this file's own, zod's, JSON.stringify's) recurses, and 10,000 levels — 20 KB of
 * brackets — overflowed the stack in each, so one message stopped its consumer for good.
 */

export type StrictJsonRefusal = 'not_utf8' | 'not_json' | 'too_deep' | 'lone_surrogate' | 'duplicate_key' | 'prototype_key';

/** Deeper than any body of the API or any message of ours nests (a record is a few levels). */
export const MAX_JSON_DEPTH = 128;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** The value of these bytes, or why they are refused. */
export function readStrictJson(bytes: Uint8Array): { value: unknown } | { refused: StrictJsonRefusal } {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return { refused: 'not_utf8' };
  }
  return readStrictJsonText(text);
}

/** The same for text already decoded as UTF-8. */
export function readStrictJsonText(text: string): { value: unknown } | { refused: StrictJsonRefusal } {
  if (nestsDeeperThan(text, MAX_JSON_DEPTH)) return { refused: 'too_deep' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { refused: 'not_json' };
  }
  if (!wellFormed(value)) return { refused: 'lone_surrogate' };
  const suspicious = suspiciousKey(text);
  if (suspicious !== undefined) return { refused: suspicious.kind === 'duplicate' ? 'duplicate_key' : 'prototype_key' };
  return { value };
}

/** Whether the text opens more than `limit` arrays and objects inside each other (strings skipped, escapes included). */
function nestsDeeperThan(text: string, limit: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i += 1; // a backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      depth += 1;
      if (depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth -= 1;
    }
  }
  return false;
}

/** Whether every string of a parsed value, keys included, is well-formed UTF-16 (no lone surrogate). */
function wellFormed(value: unknown): boolean {
  if (typeof value === 'string') return value.isWellFormed();
  if (Array.isArray(value)) return value.every(wellFormed);
  if (value !== null && typeof value === 'object') return Object.entries(value).every(([k, v]) => k.isWellFormed() && wellFormed(v));
  return true;
}

/**
 * The first key that an object of this (syntactically valid) JSON text holds twice, or a key
 * that would reach an object's prototype; undefined when there is none. Keys are compared
 * after their escapes are decoded, so `"\u0074rust"` is `trust`.
 */
export function suspiciousKey(text: string): { key: string; kind: 'duplicate' | 'prototype' } | undefined {
  // One entry per open container: the keys seen so far of an object, null for an array.
  const open: Array<Set<string> | null> = [];
  let keyNext = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (c === '"') {
      let end = i + 1;
      while (end < text.length && text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      const keys = open[open.length - 1];
      if (keyNext && keys) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (key === '__proto__' || (key === 'prototype' && keys.has('\u0000constructor'))) return { key, kind: 'prototype' };
        if (keys.has(key)) return { key, kind: 'duplicate' };
        keys.add(key);
        keyNext = false;
      }
      i = end;
    } else if (c === '{') {
      const parentKeys = open[open.length - 1];
      // An object that is the value of "constructor": a "prototype" key in it is refused too.
      const keys = new Set<string>();
      if (parentKeys && lastKeyOf(parentKeys) === 'constructor') keys.add('\u0000constructor');
      open.push(keys);
      keyNext = true;
    } else if (c === '[') {
      open.push(null);
      keyNext = false;
    } else if (c === '}' || c === ']') {
      open.pop();
      keyNext = false;
    } else if (c === ',') {
      keyNext = open[open.length - 1] instanceof Set;
    }
  }
  return undefined;
}

/** The key added last to an object's key set (sets keep insertion order). */
function lastKeyOf(keys: Set<string>): string | undefined {
  let last: string | undefined;
  for (const key of keys) last = key;
  return last;
}
