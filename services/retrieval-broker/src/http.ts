import { GovernedMemoryError, Id, SubjectId } from '@gm/contracts';
import type { z } from 'zod';
import type { FastifyRequest } from 'fastify';

/** Bodies are validated as every edge validates them (@gm/write-edge). */
export { parseBody } from '@gm/write-edge';

export function pathId(request: FastifyRequest, name: string): string {
  const raw = (request.params as Record<string, unknown>)[name];
  // A subject id is an id other than the one purged records keep (contracts' SubjectId).
  const parsed = (name === 'subjectId' ? SubjectId : Id).safeParse(raw);
  // A malformed id cannot name anything a caller may see: same answer as an unknown one.
  if (!parsed.success) throw new GovernedMemoryError('MEM_NOT_FOUND', 'no such memory');
  return parsed.data;
}

export function idempotencyKey(request: FastifyRequest): string | undefined {
  const raw = request.headers['idempotency-key'];
  if (raw === undefined) return undefined;
  const parsed = Id.safeParse(raw);
  if (!parsed.success) throw new GovernedMemoryError('MEM_VALIDATION', 'Idempotency-Key: 1–128 characters of letters, digits and . _ : @ -');
  return parsed.data;
}

/** The query string under `schema`: anything else (an unknown parameter, a repeated one, a bad id) is 422 naming fields and rules, never values. */
export function parseQuery<S extends z.ZodType>(schema: S, request: FastifyRequest): z.infer<S> {
  const parsed = schema.safeParse(request.query ?? {});
  if (!parsed.success) {
    throw new GovernedMemoryError('MEM_VALIDATION', `query: ${parsed.error.issues.map((i) => `${i.path.join('.') || 'query'}: ${i.message}`).join('; ')}`);
  }
  return parsed.data;
}
