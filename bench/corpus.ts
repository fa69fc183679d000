import { createHash } from 'node:crypto';
import { MemoryEvent, type RecordMeta } from '@gm/contracts';
import { seededRandom } from '@gm/testing/seeded-random';

/**
 * The deterministic text every probe uses: the runtimes, the raw engines and the seeded
 * datasets index the same words, so their query costs compare.
 */
const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'ze', 'pa', 'qui', 'dor', 'fen', 'gal', 'hus', 'jor', 'bex', 'wyn'];

/** Seeded, so every run indexes and queries the same text. */
export const prng = seededRandom;

/** 600 distinct pseudo-words of 2–3 syllables (no English stems for porter to conflate). */
export const VOCABULARY: readonly string[] = (() => {
  const rand = prng(7);
  const words = new Set<string>();
  while (words.size < 600) {
    const n = rand() < 0.5 ? 2 : 3;
    words.add(Array.from({ length: n }, () => SYLLABLES[Math.floor(rand() * SYLLABLES.length)] ?? 'ka').join(''));
  }
  return [...words];
})();

const pick = (rand: () => number): string => VOCABULARY[Math.floor(rand() * VOCABULARY.length)] ?? 'kalo';

/** About 400 characters: with its metadata a MemoryWritten event is then about 1 KB. */
export function contentOf(i: number): string {
  const rand = prng(1000 + i);
  return `${Array.from({ length: 52 }, () => pick(rand)).join(' ')} note ${i}`;
}

/** `count` distinct three-word queries: a repeated query would be answered by the retrieval cache. */
export function distinctQueries(count: number, seed: number): string[] {
  const rand = prng(seed);
  const out = new Set<string>();
  while (out.size < count) out.add(`${pick(rand)} ${pick(rand)} ${pick(rand)}`);
  return [...out];
}

export const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

export const tenantOf = (i: number, tenants: number): string => `bench-t${String(i % tenants).padStart(3, '0')}`;
export const RESOURCE = { kind: 'project', id: 'maple' } as const;
export const PURPOSE = 'support';

/**
 * A record the way write-admission makes one for a bench capability (team visibility, one
 * resource, purpose `support`). Used by the raw engine probes; the runtimes' seeds clone a
 * record read back from the runtime itself.
 */
export function syntheticMeta(i: number, tenants: number, now: Date): RecordMeta {
  return {
    id: `raw-${i}`, tenantId: tenantOf(i, tenants), agentId: 'bench', subjectId: `subj-${i % 20}`,
    owner: { principalId: 'bench', kind: 'agent' }, resource: { ...RESOURCE }, visibility: 'team', sensitivity: 'normal',
    purposes: [PURPOSE], kind: 'fact', contentHash: sha256(contentOf(i)),
    provenance: [{ source: 'user', observedAt: now.toISOString() }], trust: 'trusted', confidence: 0.5,
    createdAt: now.toISOString(), expiresAt: new Date(now.getTime() + 90 * 86_400_000).toISOString(),
    version: 1, status: 'active', policyRevision: 0,
  };
}

/** A MemoryWritten event as write-admission produces it on memory.events (content in clear). */
export function sampleEvent(i: number, tenants: number, now: Date): MemoryEvent {
  const record = { ...syntheticMeta(i, tenants, now), content: contentOf(i) };
  const actor = { agentId: 'bench', principalId: 'bench', principalKind: 'agent' as const, runId: `run-${i}`, purpose: PURPOSE };
  return MemoryEvent.parse({
    type: 'MemoryWritten', data: { record },
    metadata: {
      commandId: `01JBENCHCOMMAND${String(i).padStart(11, '0')}`, eventId: `01JBENCHEVENT${String(i).padStart(13, '0')}`,
      tenantId: record.tenantId, subjectId: record.subjectId, actor, now: now.toISOString(), policyRevision: 0,
    },
  });
}

/** The same event serialized: the raw Kafka record. */
export const sampleEventBytes = (i: number, tenants: number, now: Date): Buffer => Buffer.from(JSON.stringify(sampleEvent(i, tenants, now)));
