import { z } from 'zod';

export const toB64u = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64url');
export const fromB64u = (text: string): Buffer => Buffer.from(text, 'base64url');

/** Unpadded base64url text that decodes to exactly `bytes` bytes (any length when omitted). */
export function b64u(bytes?: number): z.ZodString {
  const base = z.string().regex(/^[A-Za-z0-9_-]*$/, 'must be unpadded base64url');
  if (bytes === undefined) return base;
  return base.length(Math.ceil((bytes * 4) / 3));
}
