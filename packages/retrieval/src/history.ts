import type { CapabilityClaims, RecordHistory, RecordMeta, RecordVersion, StoredRecordVersion, SupersessionLink } from '@gm/contracts';
import { isRetired } from '@gm/domain';
import { coversRecord, type ReadPathDeps } from './retrieval.ts';

/** How far a supersession chain is walked each way: corrections of corrections, not an unbounded scan. */
export const MAX_CHAIN_STEPS = 64;

/**
 * Which partitions a reader sees a version in: a quarantined version is seen where the reader
 * may `review` (the quarantine queue's rule), every other version where it may `read`.
 */
interface Sight { read: Set<string>; review: Set<string> }

const sees = (claims: CapabilityClaims, sight: Sight, record: StoredRecordVersion['record'] | RecordMeta): boolean =>
  coversRecord(record, claims, record.status === 'quarantined' ? sight.review : sight.read);

/** A version: a rejection is seen where its quarantined record was, by those who may review. */
const seesVersion = (claims: CapabilityClaims, sight: Sight, v: StoredRecordVersion): boolean =>
  coversRecord(v.record, claims, v.rejection !== undefined ? sight.review : v.record.status === 'quarantined' ? sight.review : sight.read);

const versionView = ({ event, at, by, record, rejection }: StoredRecordVersion): RecordVersion => ({
  version: record.version, status: record.status, event, at, by,
  visibility: record.visibility, sensitivity: record.sensitivity, resource: record.resource, purposes: record.purposes,
  trust: record.trust, confidence: record.confidence, expiresAt: record.expiresAt, provenance: record.provenance,
  policyRevision: record.policyRevision,
  ...(record.supersedesId === undefined ? {} : { supersedesId: record.supersedesId }),
  ...(record.supersededById === undefined ? {} : { supersededById: record.supersededById }),
  ...(record.legalHold === undefined ? {} : { legalHold: record.legalHold }),
  ...(rejection === undefined ? {} : { rejection }),
});

const link = (m: RecordMeta): SupersessionLink => ({ id: m.id, status: m.status, version: m.version, createdAt: m.createdAt });


/**
 * `GET /v1/memories/{id}/history` (docs/api.md): the versions of a record and its supersession
 * chain, each entry filtered by what this reader may see; null (the uniform 404) when the
 * record's current version is not one of them, or the record is revoked, deleted or forgotten.
 * Metadata only: no content and no content hash. `rejected`: the edge found the record rejected
 * by a reviewer and this reader one who may review it; its history answers, its last version
 * naming the reviewer's reason code.
 */
export async function readHistory(
  deps: ReadPathDeps, claims: CapabilityClaims, id: string, { rejected }: { rejected: boolean } = { rejected: false },
): Promise<RecordHistory | null> {
  const meta = await deps.state.records.get(claims.tenant, id);
  if (meta === null || (isRetired(meta.status) && !(rejected && meta.status === 'tombstoned'))) return null;
  const [read, review] = await Promise.all([
    deps.pdp.authorizedPartitions({ claims, action: 'read' }),
    deps.pdp.authorizedPartitions({ claims, action: 'review' }),
  ]);
  const sight: Sight = { read: new Set(read), review: new Set(review) };
  const stored = await deps.state.history.versions(claims.tenant, id, meta.version);
  const current = stored.at(-1);
  const seen = rejected ? current?.record.version === meta.version && current.rejection !== undefined && seesVersion(claims, sight, current) : sees(claims, sight, meta);
  if (!seen) return null;
  const versions = stored.filter((v) => seesVersion(claims, sight, v)).map(versionView);
  const older = await walk(deps, claims, sight, meta, (m) => m.supersedesId);
  const newer = await walk(deps, claims, sight, meta, (m) => m.supersededById);
  return { id, status: meta.status, version: meta.version, versions, chain: [...older.reverse(), meta, ...newer].map(link) };
}

/** The records reached by following `next` from `from`, nearest first, up to the first this reader may not see or that is retired. */
async function walk(
  deps: ReadPathDeps, claims: CapabilityClaims, sight: Sight, from: RecordMeta, next: (m: RecordMeta) => string | undefined,
): Promise<RecordMeta[]> {
  const out: RecordMeta[] = [];
  const seen = new Set([from.id]);
  for (let at = next(from); at !== undefined && !seen.has(at) && out.length < MAX_CHAIN_STEPS;) {
    const m = await deps.state.records.get(claims.tenant, at);
    if (m === null || isRetired(m.status) || !sees(claims, sight, m)) break;
    out.push(m);
    seen.add(at);
    at = next(m);
  }
  return out;
}
