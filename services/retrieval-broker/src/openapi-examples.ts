/**
 * Examples of the main flows for the OpenAPI document, taken from a run of the embedded
 * runtime (tokens and signatures shortened). Each is typed by its zod contract, and
 * openapi.unit.spec.ts parses each with it, so an example cannot drift from what is validated.
 */
import { z } from 'zod';
import {
  AddGrantRequest, AsyncWriteAccepted, CommandStatusResponse, DeletionAccepted, DeletionJob, DeletionJobList, EvidencePacket, GrantCreatedResponse,
  IssueCapabilityRequest, IssueCapabilityResponse, MemoryRecord, MutationResponse, PacketValidation, PlaceLegalHoldRequest, Problem,
  LegalHoldCreatedResponse, ReceiptResponse, RecordHistory, RejectRequest, SearchRequest, SubjectSummaries, VersionedRequest,
  WriteMemoryBatchItem, WriteMemoryBatchResponse, WriteMemoryRequest,
} from '@gm/contracts';

export interface Example {
  schema: z.ZodType;
  summary: string;
  value: unknown;
}

const example = <S extends z.ZodType>(schema: S, summary: string, value: z.input<S>): Example => ({ schema, summary, value });

const MAPLE = { kind: 'project' as const, id: 'maple' };
const OBSERVED = [{ source: 'user' as const, observedAt: '2026-11-30T07:00:00.000Z' }];
const AT = '2026-11-30T08:00:00.000Z';
const TOKEN = 'ct1.eyJ0IjoiYWNtZSIsImUiOltbMSwwXV0sImMiOltdfQ.AjBxSUEpc8k84nwEplYLXTbjFocHXAZtaWQD2E_wbfI';
const JOB_ID = '01M8VHNN0B50DE95ZZMN9H7BEH';

const write: z.input<typeof WriteMemoryRequest> = {
  id: 'mem-cust-42-contact', subjectId: 'cust-42', resource: MAPLE, kind: 'fact', trust: 'trusted',
  content: 'Customer 42 prefers email over phone calls', provenance: OBSERVED,
};

const record: z.input<typeof MemoryRecord> = {
  id: 'mem-cust-42-contact', tenantId: 'acme', agentId: 'support-bot', subjectId: 'cust-42', owner: { principalId: 'alice', kind: 'person' },
  resource: MAPLE, visibility: 'team', sensitivity: 'normal', purposes: ['support'], kind: 'fact',
  contentHash: 'ac686986973293c09a632211134fbee7aaa572ba8913a39c6544a5a262ca487a', provenance: OBSERVED, trust: 'trusted',
  confidence: 0.5, createdAt: AT, expiresAt: '2027-02-28T08:00:00.000Z', version: 1, status: 'active', policyRevision: 2,
  content: 'Customer 42 prefers email over phone calls',
};

const problem = (status: number, code: string, title: string, detail: string) =>
  ({ type: `https://governed-memory.dev/problems/${code.toLowerCase().replaceAll('_', '-')}`, title, status, code, detail, requestId: '6e7c6943-d3bf-465b-868e-872860d0c28a' });

const evidence = (target: string, verifier: string, ref: string) => ({ target, status: 'done', completedAt: AT, verifier, ref }) as const;

/** A verified delete, as GET /v1/deletion-jobs/{id} and the listing show it. */
const VERIFIED_JOB: z.input<typeof DeletionJob> = {
  jobId: JOB_ID, tenant: 'acme', subjectId: 'cust-42', recordIds: ['mem-cust-42-tz'], mode: 'delete',
  requestedBy: { agentId: 'support-bot', principalId: 'alice' }, requestedAt: AT, policyRevision: 2,
  targets: ['primary', 'keyword', 'vector', 'summary', 'retrieval_cache', 'evidence_packet', 'key'], status: 'verified',
  deadline: '2026-11-30T08:01:00.000Z',
  evidence: [
    evidence('retrieval_cache', 'retrieval-broker', 'invalidated=1;remaining=0'),
    evidence('evidence_packet', 'retrieval-broker', 'invalidated=1;remaining=0'),
    evidence('vector', 'vector-indexer', 'removed=0;remaining=0'),
    evidence('keyword', 'index-builder', 'removed=0;remaining=0'),
    evidence('summary', 'index-builder', 'holding=0;rebuilt=1;removed=0;remaining=0'),
    evidence('primary', 'projector', 'removed=1;remaining=0'),
    evidence('verification', 'receipt-verifier', 'probes=18;findings=0'),
    evidence('key', 'receipt-verifier', 'data_keys=1;keks=0;keks_kept=0;events=1;undecryptable=1;key_residue=none;wal_checkpoints=1'),
  ],
  updatedAt: AT,
  progress: { tombstoned: ['mem-cust-42-tz'], verificationAttempts: 1, findings: [], shredding: true },
};

export const EXAMPLES = {
  issueCapabilityRequest: example(IssueCapabilityRequest, 'a support agent acting for alice, for 15 minutes', {
    tenant: 'acme', agentId: 'support-bot', principal: { id: 'alice', kind: 'person' }, scopes: [MAPLE], purpose: 'support',
    actions: ['search', 'read', 'cite', 'write', 'request_delete'], ttlSeconds: 900,
  }),
  issueCapabilityResponse: example(IssueCapabilityResponse, 'the capability (a compact JWS, shortened here)', {
    token: 'eyJhbGciOiJFZERTQSIsInR5cCI6ImNhcCtqd3QifQ.eyJhY3QiOnsic3ViIjoiYWxpY2UiLCJraW5kIjoicGVyc29uIn0sInRlbmFudCI6ImFjbWUi….bwxCHMQDjgEFLJ6kL7Lb6Te_bN5HDJICq-uVWYC49HN',
    expiresAt: '2026-11-30T08:15:00.000Z', jti: '8c644df9-d955-4c50-a94b-a038f708b96f',
  }),
  writeRequest: example(WriteMemoryRequest, 'a trusted fact about a customer', write),
  writeUntrustedRequest: example(WriteMemoryRequest, 'what a tool reported: quarantined until reviewed', {
    ...write, id: 'mem-cust-42-moved', trust: 'untrusted', content: 'Tool says customer 42 moved to Porto', provenance: [{ source: 'tool', uri: 'crm://contacts/42', observedAt: AT }],
  }),
  writeResponse: example(MutationResponse, 'admitted, active', { id: 'mem-cust-42-contact', version: 1, status: 'active' }),
  asyncWriteResponse: example(AsyncWriteAccepted, 'durably in the log, not yet decided', { commandId: '01M8VHNMWPGFJM2HZEZX2Y92VT', consistencyToken: TOKEN }),
  commandResponse: example(CommandStatusResponse, 'accepted by write-admission', {
    commandId: '01M8VHNMWPGFJM2HZEZX2Y92VT', state: 'accepted', id: 'mem-cust-42-tz', version: 1, status: 'active',
  }),
  batchRequest: example(z.object({ items: z.array(WriteMemoryBatchItem) }), 'two items, one keyed for retries', {
    items: [
      { ...write, id: 'mem-cust-42-lang', content: 'Customer 42 writes in Portuguese', idempotencyKey: 'batch-7-item-0' },
      { ...write, id: 'mem-cust-42-tz', content: 'Customer 42 is in the Lisbon time zone' },
    ],
  }),
  batchResponse: example(WriteMemoryBatchResponse, 'each item as POST /v1/memories answers it', {
    items: [
      { index: 0, httpStatus: 201, id: 'mem-cust-42-lang', version: 1, status: 'active' },
      { index: 1, httpStatus: 409, error: problem(409, 'MEM_ID_TAKEN', 'Conflict', 'this id is not available to this writer') },
    ],
    consistencyToken: TOKEN,
  }),
  record: example(MemoryRecord, 'an active fact', record),
  history: example(RecordHistory, 'one version, no corrections', {
    id: record.id, status: 'active', version: 1,
    versions: [{
      version: 1, status: 'active', event: 'MemoryWritten', at: AT, by: { agentId: 'support-bot', principalId: 'alice', principalKind: 'person' },
      visibility: 'team', sensitivity: 'normal', resource: MAPLE, purposes: ['support'], trust: 'trusted', confidence: 0.5,
      expiresAt: record.expiresAt, provenance: OBSERVED, policyRevision: 2,
    }],
    chain: [{ id: record.id, status: 'active', version: 1, createdAt: AT }],
  }),
  promoteRequest: example(VersionedRequest, 'promote version 1, to the team', { expectedVersion: 1, visibility: 'team' }),
  rejectRequest: example(RejectRequest, 'reject version 1: it reads as an instruction to the agent', { expectedVersion: 1, reason: 'injected-instruction' }),
  promoteResponse: example(MutationResponse, 'active and verified', { id: 'mem-cust-42-moved', version: 2, status: 'active' }),
  rejectResponse: example(MutationResponse, 'tombstoned', { id: 'mem-cust-42-moved', version: 2, status: 'tombstoned' }),
  searchRequest: example(SearchRequest, 'a question about one subject', { query: 'how does customer 42 like to be contacted', subjectId: 'cust-42', limit: 5 }),
  searchResponse: example(EvidencePacket, 'an evidence packet (hybrid ranking)', {
    packetId: '01M8NQFJ0049RWFM3RNJ6M1H3P', runId: '7c93c89f-022a-4553-a6bf-80c07ffa5ccd', policyRevision: 2, expiresAt: '2026-11-30T08:15:00.000Z',
    items: [{
      recordId: record.id, excerpt: record.content, provenanceRefs: [...OBSERVED], allowedUse: ['support'],
      rank: { lexical: 0.879733, confidence: 0.5, recency: 1, score: 0.785, mode: 'hybrid', lexicalRank: 2, vectorRank: 1, similarity: 0.645986, fused: 0.85, semanticWeight: 0.4 },
    }],
  }),
  packetValidation: example(PacketValidation, 'every cited record is still readable', { valid: true, items: [{ recordId: record.id, valid: true }] }),
  summaries: example(SubjectSummaries, 'the subject\'s summary in the caller\'s partitions', {
    items: [{ subjectId: 'cust-42', text: 'Customer 42 prefers email over phone calls', derivedFrom: [record.id], updatedAt: AT }],
  }),
  noSummaries: example(SubjectSummaries, 'an unknown subject, an unreadable one, or not an id: alike', { items: [] }),
  deletionAccepted: example(DeletionAccepted, 'the deletion job', { jobId: JOB_ID }),
  deletionJob: example(DeletionJob, 'verified: every copy removed, the replays found nothing, the keys destroyed', VERIFIED_JOB),
  deletionJobList: example(DeletionJobList, 'one page of the tenant\'s jobs, with where the next one starts', {
    items: [VERIFIED_JOB], nextCursor: 'WzE3OTYyOTk5OTk5OTksIjAxTThWSE5OMEI1MERFOTVaWk1OOUg3QkVIIl0',
  }),
  receipt: example(ReceiptResponse, 'the signed receipt (JWS shortened), its payload, and the openings (the requester\'s answer only)', {
    receipt: 'eyJhbGciOiJFZERTQSIsInR5cCI6InJlY2VpcHQrandzIiwia2lkIjoiN2ZWcHJ1NjJCOXBJN3Y5RlFTWTZvNWl2c0xIUi1INnk3UTlndm40UnZUbyJ9.eyJyZWNlaXB0SWQiOi….7kddXCKJiFgUpyxOorybnWgCAk9cJlQeZM',
    payload: {
      receiptId: 'rcpt_7b8248d4dc52aeed2be515f8eda39a97', jobId: JOB_ID, tenant: 'acme', mode: 'delete', subjectId: 'cust-42',
      recordIds: ['mem-cust-42-tz'], contentCommitments: [{ recordId: 'mem-cust-42-tz', commitment: '5d0b0e3a9c8f4e21b7c6a1d2e3f405162738495a6b7c8d9e0f1a2b3c4d5e6f70' }],
      requestedBy: { agentId: 'support-bot', principalId: 'alice' }, requestedAt: AT, completedAt: AT, policyRevision: 2,
      targets: ['primary', 'keyword', 'vector', 'summary', 'retrieval_cache', 'evidence_packet', 'key'].map((target) => ({ target, status: 'done' as const, completedAt: AT, ref: 'removed=1;remaining=0' })),
      replay: { probes: 18, ref: 'probes=18;findings=0', attempts: 1, findings: [] },
      status: 'verified', retention: 'purged',
      eventLog: { holdsContent: false, note: 'memory.events holds these records\' content only as ciphertext whose data keys were destroyed' },
      issuedAt: AT, issuer: 'governed-memory/receipt-verifier',
    },
    openings: [{ recordId: 'mem-cust-42-tz', opening: '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08' }],
  }),
  grantRequest: example(AddGrantRequest, 'a contractor\'s membership until the end of the year', {
    principal: { id: 'dan', kind: 'person' }, resource: MAPLE, role: 'member', purposes: ['support'], notAfter: '2026-12-31T00:00:00Z',
  }),
  grantResponse: example(GrantCreatedResponse, 'applied at revision 3', { grantId: 'g-dan-maple', policyRevision: 3 }),
  legalHoldRequest: example(PlaceLegalHoldRequest, 'a hold for litigation', { subjectId: 'cust-42', reason: 'litigation 2026-17' }),
  legalHoldResponse: example(LegalHoldCreatedResponse, 'applied at revision 4', { holdId: '01M8VHNN5Q2KVPXJTW6TZDJZ20', policyRevision: 4 }),
  recordNotFound: example(Problem, 'the uniform 404', problem(404, 'MEM_NOT_FOUND', 'Not Found', 'no such memory')),
  writeInvalid: example(Problem, 'a writer claiming trust "verified"', problem(422, 'MEM_VALIDATION', 'Unprocessable Content', 'trust: a writer claims "untrusted" or "trusted"; "verified" is granted by promotion only')),
} satisfies Record<string, Example>;

export type ExampleName = keyof typeof EXAMPLES;
