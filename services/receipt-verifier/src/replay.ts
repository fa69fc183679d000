import { SearchRequest, type CapabilityClaims, type DeletionResidual, type DeletionTask, type RecordMeta } from '@gm/contracts';
import { isLive } from '@gm/domain';
import { partitionOf, rankedResults, readRecord, validatePacket, type ReadPathDeps } from '@gm/retrieval';
import { createHash } from 'node:crypto';
import type { SummaryStore } from '@gm/search-index';
import { embeddingOnce } from './embedding-once.ts';
import type { RecordProbes } from './capture.ts';

/**
 * The summaries store as the replays need it (its `holding` and `search`). Absent in a
 * deployment without summaries; the summary probes are then reported as not run
 * (`summary=absent` in the ref), never as passed.
 */
/** The summaries as the replays probe them, and as the `key` target erases what was deleted from them. */
export type SummaryProbeSource = Pick<SummaryStore, 'holding' | 'search' | 'eraseDeleted'>;

export interface ReplayDeps extends ReadPathDeps {
  summaries?: SummaryProbeSource;
}

/** Every path a deleted record could still be read from (§8.3); each replay is counted by kind. */
export const PROBE_KINDS = [
  'search_phrase', 'search_paraphrase', 'get_by_id', 'index_phrase', 'index_paraphrase', 'index_get',
  'retrieval_cache', 'evidence_packet', 'packet_validation', 'record_hash', 'tombstone', 'primary',
  'summary_holding', 'summary_search', 'vector_get', 'vector_phrase', 'vector_paraphrase',
] as const;
export type ProbeKind = (typeof PROBE_KINDS)[number];

export interface ReplayReport {
  counts: Record<ProbeKind, number>;
  /** `path:recordId` (or `path:entryId` for caches and packets): never content or queries. */
  findings: string[];
  /** Other live records of the deleted records' subjects that hold identical content: reported, never failing (§8.3). */
  residual: DeletionResidual[];
  summaries: boolean;
  /** Whether the deployment keeps vectors (else the vector probes were not run: `vector=absent`). */
  vectors: boolean;
}

const REPLAY_LIMIT = 50;
const INDEX_PROBE_LIMIT = 100;

/**
 * A capability that could read the record before it was deleted: its writer's agent and
 * owner, its resource as the only scope, its first purpose, the read actions. Built in
 * memory for the replay and never signed — no token exists that a leak could reuse.
 */
export function readerOf(probes: RecordProbes, now: Date): CapabilityClaims {
  const { meta } = probes;
  const iat = Math.floor(now.getTime() / 1000);
  return {
    iss: 'receipt-verifier', aud: 'replay', sub: meta.agentId, act: { sub: meta.owner.principalId, kind: meta.owner.kind },
    tenant: meta.tenantId, run: 'verification-replay', scopes: [meta.resource], purpose: meta.purposes[0] ?? 'general',
    actions: ['search', 'read', 'cite'], iat, exp: iat + 60, rev: 0, jti: 'verification-replay',
  };
}

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/**
 * Replays every probe of a verification task. A probe that cannot run (an engine down) is a
 * finding too (`unreachable:<path>`): verification never passes on a path it could not see.
 */
export async function replay(
  deps: ReplayDeps, task: DeletionTask, captured: Map<string, RecordProbes>, now: Date,
): Promise<ReplayReport> {
  const counts = Object.fromEntries(PROBE_KINDS.map((k) => [k, 0])) as Record<ProbeKind, number>;
  const findings = new Set<string>();
  const tenant = task.tenantId;
  const ids = new Set(task.recordIds);
  const hashes = new Set([...captured.values()].flatMap((p) => [...p.contentHashes]));
  const subjects = new Set([...captured.values()].map((p) => p.meta.subjectId));
  const residual = new Map<string, DeletionResidual>();
  const owners = new Map<string, Promise<RecordMeta | undefined>>();
  const ownerOf = (recordId: string) => {
    const known = owners.get(recordId) ?? deps.state.records.get(tenant, recordId).then((meta) => meta ?? undefined);
    owners.set(recordId, known);
    return known;
  };
  /**
   * Whether a hit is a copy of the job's records (a finding). A record is verified against
   * itself and what was derived from it, never against other writers' records: identical bytes
   * under another id are a copy only when no record accounts for them — the id is unknown, or
   * its own content is different (a stray replica). A record that does hold those bytes is its
   * own: residual when it is live and of a deleted record's subject, otherwise not ours to
   * report (another subject's record is never named in this job's evidence).
   */
  const isJobCopy = async (recordId: string, contentHash: string): Promise<boolean> => {
    if (ids.has(recordId)) return true;
    if (!hashes.has(contentHash)) return false;
    const owner = await ownerOf(recordId);
    if (owner === undefined || owner.contentHash !== contentHash) return true;
    if (isLive(owner.status) && subjects.has(owner.subjectId)) {
      residual.set(recordId, { recordId, reason: 'identical_content' });
    }
    return false;
  };

  const run = async (kind: ProbeKind, path: string, probe: () => Promise<void>) => {
    counts[kind] += 1;
    try {
      await probe();
    } catch {
      findings.add(`unreachable:${path}`);
    }
  };

  // Every probe runs at once: each is a read of its own (a round trip to an engine on Kafka, an
  // embedding on the model's thread), and none depends on another's answer. Findings are a set
  // and sorted at the end, so the order they arrive in does not show.
  const running: Array<Promise<void>> = [];
  const start = (kind: ProbeKind, path: string, probe: () => Promise<void>) => void running.push(run(kind, path, probe));
  // One embedding per text for the whole replay: the vector probe and the hybrid search probe
  // ask the model for the same query vector.
  const replayDeps: ReplayDeps = deps.semantic === undefined ? deps : { ...deps, semantic: { ...deps.semantic, model: embeddingOnce(deps.semantic.model) } };

  for (const id of task.recordIds) {
    // (e) The tombstone and the record hash: the read path's last word.
    start('tombstone', 'tombstone', async () => {
      if ((await deps.state.tombstones.filterTombstoned(tenant, [id])).size === 0) findings.add(`tombstone-missing:${id}`);
    });
    start('record_hash', 'record-hash', async () => {
      const status = (await deps.state.records.get(tenant, id))?.status;
      if (status !== undefined && isLive(status)) findings.add(`record-hash-live:${id}`);
    });
    // Probes are built from the log; a record the log did not give back was not replayed.
    if (!captured.has(id)) findings.add(`uncaptured:${id}`);
    if (!task.retainPrimary) {
      start('primary', 'primary', async () => {
        if ((await deps.state.contents.count(tenant, [id])) > 0) findings.add(`primary:${id}`);
      });
    }
    // (c) The index by id, bypassing search.
    start('index_get', 'index', async () => {
      if (await deps.index.get(tenant, id)) findings.add(`index:${id}`);
    });
    const semantic = deps.semantic;
    if (semantic) {
      start('vector_get', 'vector', async () => {
        if (await semantic.vectors.has(tenant, id)) findings.add(`vector:${id}`);
      });
    }
  }

  // The texts each record is probed with; the same text for every probe of it, as a search request takes it.
  const askedOf = (probes: RecordProbes) => [
    ...probes.phrases.map((text) => ({ text: text.slice(0, 1024), search: 'search_phrase', index: 'index_phrase' }) as const),
    ...probes.paraphrases.map((text) => ({ text: text.slice(0, 1024), search: 'search_paraphrase', index: 'index_paraphrase' }) as const),
  ];
  // Every probe text's query embedding in one request to the model: on a model thread busy
  // with indexing, each request waits for the text in progress (embedding-worker.ts).
  replayDeps.semantic?.model.embed([...captured.values()].flatMap((p) => askedOf(p).map((a) => a.text)), 'query').catch(() => undefined);

  for (const probes of captured.values()) {
    const reader = readerOf(probes, now);
    const partition = partitionOf(probes.meta);
    for (const { text, search, index } of askedOf(probes)) {
      // (c') The vector index itself: the text's embedding, nearest neighbours in the record's
      // partition for each of its purposes, at its creation time, and no similarity floor —
      // any vector of the record (or of a copy of its content) among them is a finding.
      const semantic = replayDeps.semantic;
      if (semantic) {
        const kind: ProbeKind = search === 'search_phrase' ? 'vector_phrase' : 'vector_paraphrase';
        // Embedded once per text, for all its purposes (a failure is each probe's finding).
        // Asked as a search asks: the probe stands for a reader looking for the content.
        const embedding = semantic.model.embed([text], 'query').then(([vector]) => {
          if (vector === undefined) throw new Error('no embedding');
          return vector;
        });
        embedding.catch(() => undefined);
        for (const purpose of probes.meta.purposes) {
          start(kind, 'vector', async () => {
            const vector = await embedding;
            const hits = await semantic.vectors.knn({
              tenantId: tenant, partitions: [partition], purpose, now: probes.meta.createdAt, modelId: semantic.model.modelId, vector, k: INDEX_PROBE_LIMIT,
            });
            const metas = await deps.state.records.getMany(tenant, hits.map((h) => h.recordId));
            // A vector carries no content hash: a hit is the job's when its id is, or residual
            // when its record holds the deleted bytes (the record hash says which).
            for (const hit of hits) {
              if (ids.has(hit.recordId)) findings.add(`vector:${hit.recordId}`);
              else if (metas.has(hit.recordId)) await isJobCopy(hit.recordId, metas.get(hit.recordId)?.contentHash ?? '');
            }
          });
        }
      }
      // (a) The search API as the record's own reader: cache peeked, never filled.
      start(search, 'search', async () => {
        const request = SearchRequest.parse({ query: text, limit: REPLAY_LIMIT });
        const { ranked } = await rankedResults(replayDeps, reader, request, now, { fill: false });
        for (const item of ranked) if (await isJobCopy(item.recordId, sha256(item.excerpt))) findings.add(`search:${item.recordId}`);
      });
      // (c) The index itself, in the record's own partition, for each of its purposes; time
      // set to its creation so that no expiry filter can hide a copy.
      for (const purpose of probes.meta.purposes) {
        start(index, 'index', async () => {
          const hits = await deps.index.search({
            tenantId: tenant, partitions: [partition], purpose, text, now: probes.meta.createdAt, limit: INDEX_PROBE_LIMIT,
          });
          for (const hit of hits) if (await isJobCopy(hit.doc.recordId, hit.doc.contentHash)) findings.add(`index:${hit.doc.recordId}`);
        });
      }
      // (f) The summaries that a reader of this partition could get.
      const summaries = deps.summaries;
      if (summaries) {
        for (const purpose of probes.meta.purposes) {
          start('summary_search', 'summary', async () => {
            const hits = await summaries.search({
              tenantId: tenant, partitions: [partition], purpose, now: probes.meta.createdAt, text, limit: INDEX_PROBE_LIMIT,
            });
            for (const hit of hits) {
              for (const source of hit.summary.derivedFrom) {
                if (await isJobCopy(source.recordId, source.contentHash)) findings.add(`summary-search:${source.recordId}`);
              }
            }
          });
        }
      }
    }
    // (b) Get by id, as that reader.
    start('get_by_id', 'get', async () => {
      if ((await readRecord(deps, reader, probes.id, now)) !== null) findings.add(`get:${probes.id}`);
    });
  }

  await Promise.all(running);

  // (d) Derived copies the read path made: cache entries, packets, and the action gate.
  await run('retrieval_cache', 'retrieval-cache', async () => {
    for (const key of await deps.state.cache.holding(tenant, task.recordIds)) findings.add(`retrieval-cache:${key.slice(0, 16)}`);
  });
  await run('evidence_packet', 'evidence-packet', async () => {
    for (const packetId of await deps.state.packets.holding(tenant, task.recordIds)) findings.add(`evidence-packet:${packetId}`);
  });
  const anyReader = [...captured.values()][0];
  if (anyReader) {
    const reader = readerOf(anyReader, now);
    await run('packet_validation', 'packet-validation', async () => {
      for (const packetId of await deps.state.packets.issuedWith(tenant, task.recordIds)) {
        const validation = await validatePacket(deps, reader, packetId, now);
        for (const item of validation?.items ?? []) {
          if (item.valid && ids.has(item.recordId)) findings.add(`packet-validation:${packetId}:${item.recordId}`);
        }
      }
    });
  }
  const summaries = deps.summaries;
  if (summaries) {
    await run('summary_holding', 'summary', async () => {
      for (const id of task.recordIds) if ((await summaries.holding(tenant, [id])).length > 0) findings.add(`summary:${id}`);
    });
  }
  return {
    counts, findings: [...findings].sort(),
    residual: [...residual.values()].sort((a, b) => (a.recordId < b.recordId ? -1 : a.recordId > b.recordId ? 1 : 0)),
    summaries: summaries !== undefined, vectors: deps.semantic !== undefined,
  };
}

/** The verification ack's `ref`: probe counts by kind and the numbers of findings and residual records, nothing else. */
export function replayRef(report: ReplayReport, captured: number): string {
  const total = Object.values(report.counts).reduce((a, b) => a + b, 0);
  const kinds = PROBE_KINDS
    .filter((k) => (report.summaries || !k.startsWith('summary_')) && (report.vectors || !k.startsWith('vector_')))
    .map((k) => `${k}=${report.counts[k]}`);
  return [
    `probes=${total}`, `findings=${report.findings.length}`, `residual=${report.residual.length}`, `captured=${captured}`, ...kinds,
    ...(report.summaries ? [] : ['summary=absent']), ...(report.vectors ? [] : ['vector=absent']),
  ].join(';');
}
