/**
 * The JSON body parser: a body is read exactly as sent (readStrictJson, @gm/contracts), or
 * refused; and a declared charset other than UTF-8 is refused rather than read as UTF-8.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { MAX_JSON_DEPTH, readStrictJson } from '@gm/contracts';

/** A body refused before any handler sees it; `code` is matched in edge-errors.ts. */
export class BodyRejected extends Error {
  constructor(readonly code: 'GM_BODY_NOT_UTF8' | 'GM_BODY_DUPLICATE_KEY' | 'GM_BODY_FORBIDDEN_KEY' | 'GM_BODY_CHARSET', message: string) {
    super(message);
    this.name = 'BodyRejected';
  }
}

function charsetOf(contentType: string | undefined): string | undefined {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? '');
  return match?.[1]?.toLowerCase();
}

function parse(request: FastifyRequest, body: Buffer): unknown {
  const charset = charsetOf(request.headers['content-type']);
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new BodyRejected('GM_BODY_CHARSET', 'send application/json in UTF-8 (charset=utf-8 or none)');
  }
  const read = readStrictJson(body);
  if ('value' in read) return read.value;
  switch (read.refused) {
    case 'not_utf8':
      throw new BodyRejected('GM_BODY_NOT_UTF8', 'the body is not valid UTF-8');
    case 'lone_surrogate':
      throw new BodyRejected('GM_BODY_NOT_UTF8', 'the body escapes a lone surrogate (such as \\ud800), which no UTF-8 text can hold');
    case 'not_json':
      if (body.toString('utf8').trim() === '') throw Object.assign(new Error('empty body'), { code: 'FST_ERR_CTP_EMPTY_JSON_BODY', statusCode: 400 });
      throw Object.assign(new Error('invalid JSON'), { code: 'FST_ERR_CTP_INVALID_JSON_BODY', statusCode: 400 });
    case 'too_deep':
      throw Object.assign(new Error(`the body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`), { code: 'FST_ERR_CTP_INVALID_JSON_BODY', statusCode: 400 });
    case 'duplicate_key':
      throw new BodyRejected('GM_BODY_DUPLICATE_KEY', 'an object of the body names a key twice');
    case 'prototype_key':
      throw new BodyRejected('GM_BODY_FORBIDDEN_KEY', 'the body names a key that would reach an object prototype');
  }
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
