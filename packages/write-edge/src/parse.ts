import { GovernedMemoryError } from '@gm/contracts';
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
