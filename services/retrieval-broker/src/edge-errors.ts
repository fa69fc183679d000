/**
 * The answers the framework gives around the handlers, as problem+json with a stable code like
 * every other answer (so the OpenAPI document can declare one shape for every error): the body
 * parsers', the router's (a path segment that does not decode, or is longer than any id) and
 * the connection's (not HTTP, headers too large, a request not received in time).
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorCode } from '@gm/contracts';
import type { Logger } from '@gm/observability';
import { problemOf } from './problem.ts';

export interface EdgeProblem {
  status: number;
  code: ErrorCode;
  detail: string;
}

/** Framework errors by their stable codes (never by message text). */
export function frameworkProblem(err: FastifyError): EdgeProblem {
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, code: 'MEM_PAYLOAD_TOO_LARGE', detail: 'the request body is too large' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, code: 'MEM_VALIDATION', detail: 'send application/json' };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return { status: 400, code: 'MEM_VALIDATION', detail: 'the body is not valid JSON' };
    // json-body.ts: bodies read exactly as sent, or refused.
    case 'GM_BODY_CHARSET':
      return { status: 415, code: 'MEM_VALIDATION', detail: 'send application/json in UTF-8 (charset=utf-8 or none)' };
    case 'GM_BODY_NOT_UTF8':
      return { status: 400, code: 'MEM_VALIDATION', detail: 'the body is not valid UTF-8' };
    case 'GM_BODY_DUPLICATE_KEY':
      return { status: 400, code: 'MEM_VALIDATION', detail: 'an object of the body names a key twice' };
    case 'GM_BODY_FORBIDDEN_KEY':
      return { status: 400, code: 'MEM_VALIDATION', detail: 'the body names a key that would reach an object prototype (__proto__, constructor.prototype)' };
    case 'FST_ERR_BAD_URL':
      return { status: 400, code: 'MEM_VALIDATION', detail: 'a path segment is not valid percent-encoding' };
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // The router's bound is the id bound: every id routes, and nothing longer can be one.
      return { status: 414, code: 'MEM_VALIDATION', detail: 'a path segment is longer than any id (128 characters)' };
    default:
      if (err.statusCode === 400) return { status: 400, code: 'MEM_VALIDATION', detail: 'the request is malformed' };
      return { status: 500, code: 'MEM_INTERNAL', detail: 'internal error' };
  }
}

/** Fastify's `frameworkErrors`: what the router refuses before any route (and so any handler) is chosen. */
export function routerError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const { status, code, detail } = frameworkProblem(err);
  void reply.code(status).type('application/problem+json').send(problemOf(code, detail, request.id, status));
}

/** A connection error by Node's code: what Node's own handler would answer, with our body. */
function connectionProblem(code: string | undefined): EdgeProblem {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, code: 'MEM_TIMEOUT', detail: 'the request was not received in time' };
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, code: 'MEM_PAYLOAD_TOO_LARGE', detail: 'the request line and headers are too large' };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, code: 'MEM_PAYLOAD_TOO_LARGE', detail: 'the chunk extensions are too large' };
    default:
      return { status: 400, code: 'MEM_VALIDATION', detail: 'the request is not well-formed HTTP' };
  }
}

/**
 * Fastify's `clientErrorHandler`: Node reports a connection that sent no parsable request (or
 * not in time); there is no request to answer through the router, only the socket.
 */
export function clientErrorHandler(log: Logger): (err: Error & { code?: string }, socket: Socket) => void {
  return (err, socket) => {
    // A reset connection is gone: nothing to answer.
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const { status, code, detail } = connectionProblem(err.code);
    log.debug({ code: err.code, status }, 'client error');
    if (socket.writable) {
      const body = JSON.stringify(problemOf(code, detail, undefined, status));
      socket.write(
        `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\nContent-Type: application/problem+json\r\n`
        + `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy(err);
  };
}
