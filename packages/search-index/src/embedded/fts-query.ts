/**
 * Turns free text into an FTS5 MATCH expression that can only ever mean "any of these words".
 *
 * User text is never handed to FTS5 as syntax: we keep runs of letters and digits (plus the
 * combining marks that belong to them), and quote every term. Inside double quotes FTS5 reads
 * a plain string, so `NEAR`, `AND`, `*`, `-`, `:`, `^` and parentheses lose their meaning, and
 * a term cannot contain a quote because quotes are not letters. FTS5 then runs each quoted
 * term through the table's own tokenizer, so case folding, diacritics and stemming match the
 * indexed side exactly.
 */
const TERM = /[\p{L}\p{N}][\p{L}\p{N}\p{M}]*/gu;

/** Returns null when the text holds no searchable term (e.g. only punctuation). */
export function toFtsMatchExpression(text: string): string | null {
  const terms = new Set<string>();
  // NFC first so a decomposed "é" (e + U+0301) stays one term instead of losing its mark.
  for (const match of text.normalize('NFC').toLowerCase().matchAll(TERM)) {
    terms.add(match[0]);
  }
  if (terms.size === 0) return null;
  return [...terms].map((term) => `"${term}"`).join(' OR ');
}
