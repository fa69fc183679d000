/**
 * How much of a query the lexical leg's best hit says in words (§6.7, hybrid fusion): the share
 * of the query's distinct terms that the hit's text contains. A question that names its subject
 * ("When did Caroline go to the support group?") has a best keyword hit sharing its words; a
 * paraphrase ("how should we reach the client?" for "prefers email over phone calls") has none,
 * and its keyword hits are matches on incidental words. The fusion trusts the lexical leg only in
 * the first case (rank.ts, `semanticWeightFor`).
 *
 * The same on both runtimes, whatever their engines' analysers: lower-cased runs of letters and
 * digits, less a short list of function words, with a plural or tense ending cut (so "notes" and
 * "note", "painted" and "paint" are one term). Crude on purpose: it only compares two texts'
 * words with each other, never against an index.
 */

const FUNCTION_WORDS = new Set([
  'a', 'an', 'the', 'of', 'to', 'in', 'on', 'at', 'for', 'and', 'or', 'is', 'are', 'was', 'were', 'be', 'been', 'did', 'do', 'does',
  'what', 'when', 'where', 'who', 'how', 'why', 'which', 'with', 'by', 'from', 'as', 'that', 'this', 'it', 'i', 'you', 'he', 'she',
  'they', 'we', 'my', 'your', 'his', 'her', 'their', 'our', 'me', 'him', 'them', 'us', 'about', 'after', 'before', 'has', 'have',
  'had', 'would', 'could', 'should', 'will', 'can',
]);

/** Runs of letters and digits with their combining marks, as the lexical indexes split text (fts-query.ts). */
const wordsOf = (text: string): string[] => text.normalize('NFC').match(/[\p{L}\p{N}][\p{L}\p{N}\p{M}]*/gu) ?? [];

/** A word with its plural or tense ending cut: "notes" → "note", "stories" → "story", "painted" and "painting" → "paint". */
function stem(word: string): string {
  if (word.length <= 3) return word;
  if (word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (/(?:ss|x|z|ch|sh)es$/u.test(word)) return word.slice(0, -2);
  if (word.endsWith('ing') && word.length > 5) return word.slice(0, -3);
  if (word.endsWith('ed') && word.length > 4) return word.slice(0, -2);
  if (word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

/** A text's distinct terms: lower-cased words less function words, each stemmed. */
export function termsOf(text: string): Set<string> {
  const words = wordsOf(text.toLowerCase());
  return new Set(words.filter((w) => !FUNCTION_WORDS.has(w)).map(stem));
}

/**
 * The query as the lexical leg is asked it (§6.7): its words less the function words, which
 * match half of any conversation and only add noise to BM25 (LoCoMo's questions are "what did
 * …", "when did …"); a query of function words only is asked as it is, never as nothing.
 */
export function lexicalQueryText(query: string): string {
  const words = wordsOf(query);
  const kept = words.filter((w) => !FUNCTION_WORDS.has(w.toLowerCase()));
  return kept.length === 0 ? query : kept.join(' ');
}

/** The share (0..1) of the query's distinct terms found in `text`; 0 for a query of function words only. */
export function queryCoverage(query: string, text: string): number {
  const wanted = termsOf(query);
  if (wanted.size === 0) return 0;
  const present = termsOf(text);
  let found = 0;
  for (const term of wanted) if (present.has(term)) found += 1;
  return found / wanted.size;
}
