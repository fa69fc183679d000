/**
 * The JSON body parser (issue 16, defect 3): a body is read exactly as sent, or refused. JSON.parse
 * alone would reinterpret four kinds of input silently — invalid UTF-8 or an escaped lone surrogate becomes U+FFFD, a
 * duplicate key keeps its last value (`"trust":"untrusted","trust":"trusted"` stored an active
 * record), and a declared charset other than UTF-8 is read as UTF-8 anyway.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** A body refused before any handler sees it; `code` is matched in edge-errors.ts. */
export class BodyRejected extends Error {
  constructor(readonly code: 'GM_BODY_NOT_UTF8' | 'GM_BODY_DUPLICATE_KEY' | 'GM_BODY_FORBIDDEN_KEY' | 'GM_BODY_CHARSET', message: string) {
    super(message);
    this.name = 'BodyRejected';
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** The charset a Content-Type declares, lower-cased, if any. */
function charsetOf(contentType: string | undefined): string | undefined {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? '');
  return match?.[1]?.toLowerCase();
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

/** Whether every string of a parsed body, keys included, is well-formed UTF-16 (no lone surrogate). */
function wellFormed(value: unknown): boolean {
  if (typeof value === 'string') return value.isWellFormed();
  if (Array.isArray(value)) return value.every(wellFormed);
  if (value !== null && typeof value === 'object') return Object.entries(value).every(([k, v]) => k.isWellFormed() && wellFormed(v));
  return true;
}

function parse(request: FastifyRequest, body: Buffer): unknown {
  const charset = charsetOf(request.headers['content-type']);
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new BodyRejected('GM_BODY_CHARSET', 'send application/json in UTF-8 (charset=utf-8 or none)');
  }
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new BodyRejected('GM_BODY_NOT_UTF8', 'the body is not valid UTF-8');
  }
  if (text.trim() === '') throw Object.assign(new Error('empty body'), { code: 'FST_ERR_CTP_EMPTY_JSON_BODY', statusCode: 400 });
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw Object.assign(new Error('invalid JSON'), { code: 'FST_ERR_CTP_INVALID_JSON_BODY', statusCode: 400 });
  }
  // A `\ud800` escape is valid JSON but no Unicode text: stored, it would become U+FFFD.
  if (!wellFormed(value)) throw new BodyRejected('GM_BODY_NOT_UTF8', 'the body escapes a lone surrogate (such as \\ud800), which no UTF-8 text can hold');
  const suspicious = suspiciousKey(text);
  if (suspicious?.kind === 'duplicate') throw new BodyRejected('GM_BODY_DUPLICATE_KEY', 'an object of the body names a key twice');
  if (suspicious) throw new BodyRejected('GM_BODY_FORBIDDEN_KEY', 'the body names a key that would reach an object prototype');
  return value;
}

/** Replaces Fastify's JSON parser with `parse` (route body limits still apply: it reads a buffer). */
export function strictJsonBodies(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    try {
      done(null, parse(request, body as Buffer));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}
