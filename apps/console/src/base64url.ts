/** base64url (RFC 4648 §5, unpadded) as JWS and JWT use it. */

const ALPHABET = /^[A-Za-z0-9_-]*$/;

/** The bytes of a base64url text, or null when it is not one (wrong alphabet, padding, or length). */
export function decodeBase64Url(text: string): Uint8Array<ArrayBuffer> | null {
  if (!ALPHABET.test(text) || text.length % 4 === 1) return null;
  const base64 = text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4);
  let binary: string;
  try {
    binary = atob(base64);
  } catch {
    return null;
  }
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** A base64url segment holding UTF-8 JSON, parsed; null for anything else. */
export function decodeJsonSegment(segment: string): unknown {
  const bytes = decodeBase64Url(segment);
  if (bytes === null) return null;
  try {
    return JSON.parse(utf8.decode(bytes)) as unknown;
  } catch {
    return null;
  }
}

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
