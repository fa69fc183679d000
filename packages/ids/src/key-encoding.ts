/**
 * The one encoding of store keys and composite members (design §4): each part is escaped so that
 * it never holds the separator, then the parts are joined by it. Different part lists never give
 * the same key — whatever the parts hold (`:`, `/`, `%`, NUL, nothing) — so tenant `acme:x`'s
 * record `y` and tenant `acme`'s record `x:y` are two keys. Parts without those characters are
 * unchanged, so keys of ordinary ids read as before.
 */
const SEPARATOR = ':';
const ESCAPED = /[%:/\u0000]/g;

/** One part, escaped: `%` `:` `/` and NUL become `%25` `%3A` `%2F` `%00`. */
export const keyPart = (part: string): string =>
  part.replace(ESCAPED, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);

/** The key of these parts (at least one). */
export function keyOf(...parts: string[]): string {
  if (parts.length === 0) throw new RangeError('a key has at least one part');
  return parts.map(keyPart).join(SEPARATOR);
}

/** The parts a key was made of: `partsOf(keyOf(...p))` is `p`. */
export function partsOf(key: string): string[] {
  return key.split(SEPARATOR).map((part) => part.replace(/%([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))));
}
