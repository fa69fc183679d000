import type { Bus } from '@gm/bus';
import { ERASED_CONTENT_HASH, ERASED_SUBJECT_ID, TOPICS, isUnreadableContent, readMemoryEvent, subjectKey, type RecordMeta } from '@gm/contracts';
import type { StateStore } from '@gm/state-store';

/**
 * What verification replays ask for one deleted record (§8.3). Built from the event log in
 * the verifier's memory for one verification pass and dropped with it: never persisted,
 * never logged, never sent. Findings name the path and the record id only.
 */
export interface RecordProbes {
  id: string;
  /** The record as its writer last left it live (no content): writer, owner, partition, purposes. */
  meta: RecordMeta;
  /** sha256 of every content version the log holds for the id: a copy under another id is still a copy. */
  contentHashes: Set<string>;
  /** Per content version: a run of consecutive words, verbatim. */
  phrases: string[];
  /** Per content version: the most distinctive terms, reordered (a reader who half-remembers). */
  paraphrases: string[];
}

const PHRASE_WORDS = 6;
const PARAPHRASE_TERMS = 4;
const STOPWORDS = new Set([
  'a', 'an', 'and', 'are', 'as', 'at', 'be', 'by', 'for', 'from', 'has', 'have', 'in', 'is', 'it', 'its', 'of', 'on', 'or',
  'over', 'that', 'the', 'their', 'this', 'to', 'was', 'were', 'with',
]);

const termOf = (word: string): string => word.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, '');

/** How telling a term is: longer and less common-looking words first (deterministic). */
const distinctiveness = (term: string): number => (term.length === 0 || STOPWORDS.has(term) ? 0 : term.length + (/\p{N}/u.test(term) ? 4 : 0));

/** The run of PHRASE_WORDS consecutive words that carries the most distinctive terms. */
export function exactPhrase(content: string): string {
  const words = content.split(/\s+/).filter((w) => termOf(w) !== '');
  if (words.length <= PHRASE_WORDS) return words.join(' ');
  let best = 0;
  let bestScore = -1;
  for (let start = 0; start + PHRASE_WORDS <= words.length; start++) {
    const score = words.slice(start, start + PHRASE_WORDS).reduce((sum, w) => sum + distinctiveness(termOf(w)), 0);
    if (score > bestScore) {
      best = start;
      bestScore = score;
    }
  }
  return words.slice(best, best + PHRASE_WORDS).join(' ');
}

/** The PARAPHRASE_TERMS most distinctive distinct terms, in an order unlike the content's. */
export function paraphrase(content: string): string {
  const terms = [...new Set(content.split(/\s+/).map(termOf).filter((t) => distinctiveness(t) > 0))];
  const picked = terms
    .map((term, position) => ({ term, position }))
    .sort((a, b) => distinctiveness(b.term) - distinctiveness(a.term) || a.position - b.position)
    .slice(0, PARAPHRASE_TERMS);
  // Reversed reading order: the same facts, not the same sentence.
  const chosen = picked.sort((a, b) => b.position - a.position).map((p) => p.term);
  return (chosen.length > 0 ? chosen : terms.slice(0, PARAPHRASE_TERMS)).join(' ');
}

/**
 * Rebuilds the deleted records' probes from the subject partitions of memory.events: the
 * MemoryWritten / MemoryPromoted events of each id carry its metadata and content. The
 * primary copy is purged by the time verification runs; the log still holds the content,
 * sealed, and its keys are destroyed only after these replays found nothing (the `key` task).
 */
export async function captureProbes(
  deps: { bus: Bus; state: StateStore }, tenantId: string, recordIds: string[], fallbackSubjectId?: string,
): Promise<Map<string, RecordProbes>> {
  const wanted = new Set(recordIds);
  const subjects = new Set<string>();
  // A record already purged names no subject any more (§8.4): the job's subject stands for it.
  for (const meta of (await deps.state.records.getMany(tenantId, recordIds)).values()) {
    if (meta.subjectId !== ERASED_SUBJECT_ID) subjects.add(meta.subjectId);
  }
  if (subjects.size < recordIds.length && fallbackSubjectId !== undefined) subjects.add(fallbackSubjectId);
  const keys = new Set([...subjects].map((s) => subjectKey(tenantId, s)));
  const partitions = new Set([...keys].map((key) => deps.bus.partitionFor(TOPICS.events, key)));

  const metas = new Map<string, RecordMeta>();
  const contents = new Map<string, Map<string, string>>();
  const keep = (id: string, hash: string, content: string) => {
    // Content whose key was destroyed (or that this view may not read) gives no probe text;
    // its hash still does, from the record's metadata.
    if (isUnreadableContent(content)) return;
    const versions = contents.get(id) ?? new Map<string, string>();
    versions.set(hash, content);
    contents.set(id, versions);
  };
  for (const partition of partitions) {
    // Only the subjects' own events: an id is claimed for one subject (§5.10), so every event
    // of these records is under its subject's key, and the others' events stay unopened.
    for await (const message of deps.bus.readPartition(TOPICS.events, partition, 0, { keys })) {
      const event = readMemoryEvent(message);
      if (event.metadata.tenantId !== tenantId) continue;
      if (event.type === 'MemoryWritten' && wanted.has(event.data.record.id)) {
        const { content, ...meta } = event.data.record;
        metas.set(meta.id, meta);
        keep(meta.id, meta.contentHash, content);
      } else if (event.type === 'MemoryPromoted' && wanted.has(event.data.id)) {
        metas.set(event.data.id, event.data.record);
        if (event.data.content !== undefined) keep(event.data.id, event.data.record.contentHash, event.data.content);
      }
    }
  }

  const probes = new Map<string, RecordProbes>();
  for (const [id, meta] of metas) {
    const versions = contents.get(id) ?? new Map<string, string>();
    const texts = [...versions.values()];
    probes.set(id, {
      id, meta,
      // The placeholder of a hash that was sealed with an erased content is no content's hash.
      contentHashes: new Set([...versions.keys(), meta.contentHash].filter((h) => h !== ERASED_CONTENT_HASH)),
      phrases: [...new Set(texts.map(exactPhrase).filter((p) => p !== ''))],
      paraphrases: [...new Set(texts.map(paraphrase).filter((p) => p !== ''))],
    });
  }
  return probes;
}
