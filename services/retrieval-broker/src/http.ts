import { GovernedMemoryError, Id } from '@gm/contracts';
import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';

/** Validates a body; the message names fields and rules, never the values sent. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const parsed = schema.safeParse(body ?? {});
  if (parsed.success) return parsed.data;
  const detail = parsed.error.issues
    .slice(0, 10)
    .map((i) => `${i.path.length > 0 ? i.path.join('.') : 'body'}: ${i.message}`)
    .join('; ');
  throw new GovernedMemoryError('MEM_VALIDATION', detail);
}

export function pathId(request: FastifyRequest, name: string): string {
  const raw = (request.params as Record<string, unknown>)[name];
  const parsed = Id.safeParse(raw);
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
