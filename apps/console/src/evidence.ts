import type { DeletionEvidence, DeletionJob } from './api-types.ts';

/**
 * What each target's evidence (`ref`, `key=value;…`, counts read back by the worker after its
 * step) says, in words. The workers write it (docs/deletion.md): the `keyword` and `vector`
 * writer groups drop a record as they read its tombstone, and their deletion step waits until
 * they have, so a zero `removed` there is the usual case, not a deletion that did nothing.
 */

/** Every key the targets write in `ref`, with what it counts. */
export const EVIDENCE_LEGEND: Record<string, string> = {
  removed: 'copies this step deleted itself',
  remaining: 'copies still there when the step read the store back afterwards (0 is the goal)',
  retained: 'content copies kept on purpose (a revocation or a legal hold)',
  holding: 'summaries that held the records before this step',
  rebuilt: 'summaries rebuilt without the records',
  invalidated: 'cached results or evidence packets that named the records and were invalidated',
  data_keys: 'the records\' data keys destroyed',
  keks: 'the subject\'s key-encryption keys destroyed (a forget)',
  keks_kept: 'key-encryption keys kept, because a record outside the job still needs them',
  events: 'events of the records read back from the event log',
  undecryptable: 'of those events, how many no longer decrypt (all of them, for the step to be done)',
  key_residue: 'what the key store still holds of the destroyed keys: none, or until_compaction (the keys topic until it compacts)',
  wal_checkpoints: 'tries of the key store\'s write-ahead-log checkpoint that emptied it',
  copies: 'per copy outside the log, what is physically true of the deleted bytes: erased, pending_compaction or memory_only',
  // The verification replays (receipt-verifier): how many probes of each kind ran, and what they found.
  probes: 'verification probes run, of every kind below',
  findings: 'probes that still found a job record somewhere (0 for the job to verify)',
  residual: 'other live records of the subject holding the same content (named in the job; they do not fail it)',
  captured: 'job records whose events the verifier read back from the log to build its probes',
  search_phrase: 'searches through the search API for an exact phrase of the content',
  search_paraphrase: 'searches through the search API for its distinctive terms, reordered',
  get_by_id: 'reads by id, as the record\'s former reader',
  index_phrase: 'phrase queries on the search index directly',
  index_paraphrase: 'paraphrase queries on the search index directly',
  index_get: 'reads of the search index by id',
  retrieval_cache: 'checks of the retrieval cache for entries naming the records',
  evidence_packet: 'checks of live evidence packets naming the records',
  packet_validation: 'validations of every packet ever issued with the records',
  record_hash: 'checks that the record is no longer live in the record hash',
  tombstone: 'checks that the tombstone is there',
  primary: 'checks that the primary content copy is gone',
  summary_holding: 'checks that no summary derives from the records',
  summary_search: 'summary searches for the phrase and paraphrase',
  vector_get: 'reads of the vector index by id',
  vector_phrase: 'nearest-neighbour searches for the phrase\'s embedding',
  vector_paraphrase: 'nearest-neighbour searches for the paraphrase\'s embedding',
  summary: '"absent": no summary store is wired in, so none was probed',
  vector: '"absent": no vector index is wired in, so none was probed',
};

/** `a=1;b=x` → entries in order; a part without `=` is kept as a key with an empty value. */
export function parseRef(ref: string): Array<[string, string]> {
  return ref.split(';').filter((part) => part !== '').map((part) => {
    const at = part.indexOf('=');
    return at < 0 ? [part, ''] : [part.slice(0, at), part.slice(at + 1)];
  });
}

const count = (fields: Map<string, string>, key: string): number | undefined => {
  const raw = fields.get(key);
  if (raw === undefined || !/^\d+$/.test(raw)) return undefined;
  return Number(raw);
};
const copiesOf = (n: number) => (n === 1 ? '1 copy' : `${n} copies`);
const remainSentence = (n: number) => (n === 1 ? '1 copy remains' : `${n} copies remain`);
const WHERE: Record<string, string> = {
  primary: 'the primary content store',
  keyword: 'the search index',
  vector: 'the vector index',
  summary: 'the summaries',
  retrieval_cache: 'the retrieval cache',
  evidence_packet: 'the evidence packets',
  key: 'the encryption keys',
};
const DROPPED_BY: Record<string, string> = { keyword: 'the index-builder', vector: 'the vector-indexer' };

/** One sentence for a target's evidence; the raw `ref` stays beside it on the page. */
export function explainEvidence(evidence: DeletionEvidence, job: Pick<DeletionJob, 'recordIds'>): string {
  const fields = new Map(parseRef(evidence.ref));
  const failed = evidence.status === 'failed' ? 'Failed: ' : '';
  const removed = count(fields, 'removed');
  const remaining = count(fields, 'remaining');
  const retained = count(fields, 'retained');
  const invalidated = count(fields, 'invalidated');
  const holding = count(fields, 'holding');
  const rebuilt = count(fields, 'rebuilt');
  const where = WHERE[evidence.target] ?? evidence.target;

  if (evidence.target === 'key' && fields.has('data_keys')) return failed + keySentence(fields);
  const probes = count(fields, 'probes');
  const findings = count(fields, 'findings');
  if (probes !== undefined && findings !== undefined) {
    const residual = count(fields, 'residual') ?? 0;
    return `${failed}ran ${probes} probes on every path a copy could be read from (search, reads by id, the index, caches, packets, summaries, vectors where kept): `
      + `${findings === 0 ? 'none found a job record' : `${findings} still found one`}`
      + `${residual === 0 ? '' : `; ${residual} other live ${residual === 1 ? 'record of the subject holds' : 'records of the subject hold'} the same content (residual)`}.`;
  }
  if (retained !== undefined) return `${failed}kept on purpose (a revocation or a legal hold): ${copiesOf(retained)} of the content retained in ${where}.`;
  if (job.recordIds.length === 0 && removed === 0 && remaining === 0) return `${failed}nothing to remove: the job took no records; 0 copies remain.`;
  if (holding !== undefined && rebuilt !== undefined && removed !== undefined && remaining !== undefined) {
    const first = holding === 0 ? 'no summary held the records' : `${holding} ${holding === 1 ? 'summary' : 'summaries'} held the records: ${rebuilt} rebuilt without them, ${removed} deleted`;
    return `${failed}${first}; ${remaining} still ${remaining === 1 ? 'holds' : 'hold'} them.`;
  }
  if (invalidated !== undefined && remaining !== undefined) {
    return invalidated === 0
      ? `${failed}nothing in ${where} named the records; ${remainSentence(remaining)}.`
      : `${failed}invalidated ${invalidated} ${invalidated === 1 ? 'entry' : 'entries'} of ${where} that named the records; ${remainSentence(remaining)}.`;
  }
  if (removed !== undefined && remaining !== undefined) {
    const dropper = DROPPED_BY[evidence.target];
    if (removed === 0 && dropper !== undefined) {
      // The evidence cannot tell "dropped at the tombstone" from "never held" (a quarantined record is never indexed).
      return `${failed}removed when the records were tombstoned, by ${dropper} (before this step ran; a record never searchable, such as a quarantined one, was never there); ${remainSentence(remaining)}, read back by id.`;
    }
    if (removed === 0) return `${failed}nothing left to remove in ${where} when this step ran; ${remainSentence(remaining)}, read back by id.`;
    return `${failed}removed ${copiesOf(removed)} from ${where}; ${remainSentence(remaining)}, read back by id.`;
  }
  return `${failed}${evidence.ref === '' ? 'no evidence given' : `evidence: ${evidence.ref}`}.`;
}

function keySentence(fields: Map<string, string>): string {
  const parts = [`destroyed ${fields.get('data_keys') ?? '?'} data keys`];
  const keks = count(fields, 'keks');
  if (keks !== undefined && keks > 0) parts.push(`${keks} subject ${keks === 1 ? 'key' : 'keys'}`);
  const kept = count(fields, 'keks_kept');
  let sentence = parts.join(' and ');
  if (kept !== undefined && kept > 0) sentence += ` (${kept} kept for records outside the job)`;
  const events = count(fields, 'events');
  const undecryptable = count(fields, 'undecryptable');
  if (events !== undefined && undecryptable !== undefined) {
    sentence += `; ${undecryptable} of the records' ${events} events in the log no longer decrypt`;
  }
  const residue = fields.get('key_residue');
  if (residue === 'none') sentence += '; the key store keeps no copy of the destroyed keys';
  if (residue === 'until_compaction') sentence += '; the keys topic keeps the old wrapped keys until it compacts';
  const copies = fields.get('copies');
  if (copies !== undefined && copies !== '') sentence += `; on disk: ${copies.split(',').map((c) => c.replace(':', ' ').replace(/_/g, ' ')).join(', ')}`;
  return `${sentence}.`;
}

/** The legend's keys for these evidences, in the legend's order (unknown keys last, as written). */
export function legendKeys(evidences: readonly DeletionEvidence[]): string[] {
  const used = new Set(evidences.flatMap((e) => parseRef(e.ref).map(([key]) => key)));
  const known = Object.keys(EVIDENCE_LEGEND).filter((key) => used.has(key));
  return [...known, ...[...used].filter((key) => !(key in EVIDENCE_LEGEND)).sort()];
}
