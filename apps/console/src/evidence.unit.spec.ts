import { describe, expect, it } from 'vitest';
import type { DeletionEvidence } from './api-types.ts';
import { EVIDENCE_LEGEND, explainEvidence, legendKeys, parseRef } from './evidence.ts';

const evidence = (target: DeletionEvidence['target'], ref: string, status: DeletionEvidence['status'] = 'done'): DeletionEvidence =>
  ({ target, status, completedAt: '2026-12-06T01:02:03.456Z', verifier: 'w', ref });
const job = { recordIds: ['r-1'] };

describe('deletion evidence in words', () => {
  it('says a zero removal in the indexes was done at the tombstone, not that nothing was deleted', () => {
    for (const target of ['keyword', 'vector'] as const) {
      const sentence = explainEvidence(evidence(target, 'removed=0;remaining=0'), job);
      expect(sentence).toMatch(/^removed when the records were tombstoned, by the (index-builder|vector-indexer) \(before this step ran/);
      expect(sentence).toContain('0 copies remain');
    }
  });

  it('counts what a step removed, what it kept on purpose and what is left', () => {
    expect(explainEvidence(evidence('primary', 'removed=2;remaining=0'), job)).toBe('removed 2 copies from the primary content store; 0 copies remain, read back by id.');
    expect(explainEvidence(evidence('primary', 'retained=1'), job)).toContain('kept on purpose');
    expect(explainEvidence(evidence('keyword', 'removed=1;remaining=1', 'failed'), job)).toBe('Failed: removed 1 copy from the search index; 1 copy remains, read back by id.');
    expect(explainEvidence(evidence('summary', 'holding=2;rebuilt=1;removed=1;remaining=0'), job)).toBe('2 summaries held the records: 1 rebuilt without them, 1 deleted; 0 still hold them.');
    expect(explainEvidence(evidence('retrieval_cache', 'invalidated=0;remaining=0'), job)).toBe('nothing in the retrieval cache named the records; 0 copies remain.');
    expect(explainEvidence(evidence('keyword', 'removed=0;remaining=0'), { recordIds: [] })).toBe('nothing to remove: the job took no records; 0 copies remain.');
    const key = explainEvidence(evidence('key', 'data_keys=3;keks=1;keks_kept=0;events=3;undecryptable=3;key_residue=none;wal_checkpoints=1;copies=state:erased,index:erased'), job);
    expect(explainEvidence(evidence('verification', 'probes=14;findings=0;residual=1;captured=1'), job))
      .toMatch(/^ran 14 probes on every path .*: none found a job record; 1 other live record of the subject holds the same content \(residual\)\.$/);
    expect(key).toBe('destroyed 3 data keys and 1 subject key; 3 of the records\' 3 events in the log no longer decrypt; the key store keeps no copy of the destroyed keys; on disk: state erased, index erased.');
  });

  it('has a legend entry for every counter the targets write, and names unknown ones', () => {
    const refs = [
      'removed=1;remaining=0', 'retained=1', 'holding=0;rebuilt=0;removed=0;remaining=0', 'invalidated=1;remaining=0',
      'data_keys=1;keks=0;keks_kept=0;events=1;undecryptable=1;key_residue=until_compaction;copies=state:memory_only',
      'data_keys=1;keks=0;keks_kept=0;events=1;undecryptable=1;key_residue=none;wal_checkpoints=1;copies=state:erased',
      'probes=19;findings=0;residual=0;captured=1;search_phrase=1;search_paraphrase=1;get_by_id=1;index_phrase=1;index_paraphrase=1;index_get=1;'
        + 'retrieval_cache=1;evidence_packet=1;packet_validation=0;record_hash=1;tombstone=1;primary=1;summary_holding=1;summary_search=1;'
        + 'vector_get=1;vector_phrase=1;vector_paraphrase=1;summary=absent;vector=absent',
    ];
    const keys = new Set(refs.flatMap((ref) => parseRef(ref).map(([k]) => k)));
    for (const key of keys) expect(EVIDENCE_LEGEND[key], key).toBeDefined();
    expect(legendKeys([evidence('primary', 'remaining=0;removed=1;novel=2')])).toEqual(['removed', 'remaining', 'novel']);
  });
});
