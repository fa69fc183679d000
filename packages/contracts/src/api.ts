import { z } from 'zod';
import { Action } from './capability.ts';
import { LIMITS } from './limits.ts';
import { ProducerPublicKey } from './producer-proof.ts';
import {
  CallerEmbedding, Content, Id, IsoTime, MemoryKind, Principal, PrincipalKind, Purpose, ResourceRef, ScopeRef, Sensitivity, SubjectId, TenantId, Visibility, WriteTrust,
} from './primitives.ts';
import { RejectionReason } from './messages.ts';
import { Delegation, Grant, LegalHold, TENANT_ROLES } from './policy.ts';
import { Provenance, RecordStatus } from './record.ts';

/** POST /v1/capabilities — the issuer (an IdP or an admin) vouches for every claim here. */
export const IssueCapabilityRequest = z
  .object({
    tenant: TenantId,
    agentId: Id,
    principal: z.object({ id: Id, kind: PrincipalKind }).strict().optional(),
    run: Id.optional(),
    scopes: z.array(ScopeRef).min(1).max(64),
    purpose: Purpose,
    actions: z.array(Action).min(1),
    ttlSeconds: z.number().int().min(1).max(LIMITS.maxCapabilityTtlSeconds).optional(),
    /**
     * A producer's public key: the capability is bound to it (claim `cnf.jkt`), refused as a
     * bearer token by the HTTP API and taken on memory.ingest only with messages this key signed
     * (design §6.1, docs/ingest.md#producer-proofs).
     */
    producerKey: ProducerPublicKey.optional(),
  })
  .strict()
  .refine((r) => r.scopes.every((s) => s.kind !== 'tenant' || s.id === r.tenant), {
    message: 'a tenant scope names the capability\'s own tenant', path: ['scopes'],
  });
export type IssueCapabilityRequest = z.infer<typeof IssueCapabilityRequest>;

export const IssueCapabilityResponse = z.object({ token: z.string(), expiresAt: IsoTime, jti: Id });

/**
 * POST /v1/memories. tenantId, agentId and owner may be named only to be checked against the
 * capability: a mismatch is impersonation and is rejected, never silently corrected (§5.2).
 */
export const WriteMemoryRequest = z
  .object({
    id: Id.optional(),
    tenantId: Id.optional(),
    agentId: Id.optional(),
    owner: Principal.optional(),
    subjectId: SubjectId,
    resource: ResourceRef,
    visibility: Visibility.default('team'),
    sensitivity: Sensitivity.default('normal'),
    purposes: z.array(Purpose).min(1).max(LIMITS.maxPurposes).optional(),
    kind: MemoryKind,
    content: Content,
    provenance: z.array(Provenance).min(1).max(LIMITS.maxProvenance),
    trust: WriteTrust,
    confidence: z.number().min(0).max(1).default(0.5),
    expiresAt: IsoTime.optional(),
    supersedesId: Id.optional(),
    expectedVersion: z.number().int().min(0).default(0),
    /**
     * The caller's own embedding of `content`, from the model the runtime declares (else 422):
     * indexed instead of the runtime's, sealed like the content (§6.7).
     */
    embedding: CallerEmbedding.optional(),
  })
  .strict();
export type WriteMemoryRequest = z.infer<typeof WriteMemoryRequest>;

export const MutationResponse = z.object({ id: Id, version: z.number().int(), status: RecordStatus });

/**
 * POST /v1/memories:batch. The envelope is checked first (a bad one writes nothing); each item
 * then passes or fails on its own as the body of POST /v1/memories would, its `idempotencyKey`
 * standing for that route's Idempotency-Key header.
 */
export const WriteMemoryBatchRequest = z.object({ items: z.array(z.unknown()).min(1).max(LIMITS.maxBatchItems) }).strict();
export const WriteMemoryBatchItem = WriteMemoryRequest.extend({ idempotencyKey: Id.optional() }).strict();
export type WriteMemoryBatchItem = z.infer<typeof WriteMemoryBatchItem>;

/** POST /v1/memories/{id}/promote: the version reviewed, and optionally a wider visibility. */
export const VersionedRequest = z
  .object({ expectedVersion: z.number().int().min(0), visibility: Visibility.optional() })
  .strict();

/**
 * POST /v1/memories/{id}/reject: the version reviewed, and optionally why (a code: the record's
 * history shows it); a rejection moves nothing, so it takes no visibility.
 */
export const RejectRequest = VersionedRequest.omit({ visibility: true }).extend({ reason: RejectionReason.optional() }).strict();

/** GET /v1/review/quarantine: optionally one subject's queued records only. */
export const QuarantineQuery = z.object({ subjectId: SubjectId.optional() }).strict();
export type QuarantineQuery = z.infer<typeof QuarantineQuery>;

export const SearchMode = z.enum(['lexical', 'semantic', 'hybrid']);
export type SearchMode = z.infer<typeof SearchMode>;

export const SearchRequest = z
  .object({
    query: z.string().min(1).max(LIMITS.maxQueryLength),
    subjectId: SubjectId.optional(),
    kinds: z.array(MemoryKind).min(1).optional(),
    limit: z.number().int().min(1).max(LIMITS.maxSearchLimit).default(10),
    tokenBudget: z.number().int().min(1).max(LIMITS.maxTokenBudget).default(2000),
    /**
     * Which legs answer (§6.7): BM25 only, nearest neighbours only, or both fused (a weighted
     * sum whose weight follows the query). Unset = hybrid where the runtime keeps vectors, else lexical.
     */
    mode: SearchMode.optional(),
    /** The caller's own embedding of the query, from the model the runtime declares (else 422). */
    embedding: CallerEmbedding.optional(),
  })
  .strict();
export type SearchRequest = z.infer<typeof SearchRequest>;

/**
 * Why an item is where it is. `lexical`, `confidence` and `recency` are in 0..1 and `score`
 * is their weighted sum with the relevance of the mode; a semantic or hybrid search also
 * reports each leg's rank (1 = best, absent when that leg did not find the item), the cosine
 * similarity; a hybrid search also the fused score and the semantic leg's weight in it.
 */
export const RankExplanation = z.object({
  lexical: z.number(),
  confidence: z.number(),
  recency: z.number(),
  score: z.number(),
  mode: SearchMode.optional(),
  lexicalRank: z.number().int().min(1).optional(),
  vectorRank: z.number().int().min(1).optional(),
  similarity: z.number().optional(),
  fused: z.number().optional(),
  /** Hybrid: the semantic leg's weight in `fused` (0.4 when the best keyword hit holds more than a quarter of the query's terms, else 0.9). */
  semanticWeight: z.number().min(0).max(1).optional(),
});
export type RankExplanation = z.infer<typeof RankExplanation>;

export const PacketItem = z.object({
  recordId: Id,
  excerpt: z.string(),
  provenanceRefs: z.array(Provenance),
  allowedUse: z.array(Purpose),
  rank: RankExplanation,
});
export type PacketItem = z.infer<typeof PacketItem>;

export const EvidencePacket = z.object({
  packetId: Id,
  runId: Id,
  policyRevision: z.number().int(),
  expiresAt: IsoTime,
  items: z.array(PacketItem),
});
export type EvidencePacket = z.infer<typeof EvidencePacket>;

export const PacketValidation = z.object({
  valid: z.boolean(),
  items: z.array(z.object({ recordId: Id, valid: z.boolean() })),
});
export type PacketValidation = z.infer<typeof PacketValidation>;

export const DeletionAccepted = z.object({ jobId: Id });

/**
 * `DELETE /v1/memories/{id}?scope=`: `record` (the default) deletes the record and what was
 * derived from it; `content` also deletes every other live record of its subject holding the
 * same content that the requester may delete.
 */
export const DeletionScope = z.enum(['record', 'content']);
export type DeletionScope = z.infer<typeof DeletionScope>;

/**
 * `key`: crypto-shredding (§8.5). Runs after the verification replays found nothing: the
 * records' data keys (and, for a forget, the subject's KEK once nothing else depends on it)
 * are destroyed, then every event of the records is shown to no longer decrypt.
 */
export const DeletionTarget = z.enum(['primary', 'keyword', 'vector', 'summary', 'retrieval_cache', 'evidence_packet', 'key']);
export type DeletionTarget = z.infer<typeof DeletionTarget>;
export const DeletionJobStatus = z.enum(['accepted', 'invalidating', 'verifying', 'verified', 'failed']);
export type DeletionJobStatus = z.infer<typeof DeletionJobStatus>;

export const DeletionEvidence = z.object({
  target: z.string(),
  status: z.enum(['done', 'failed']),
  completedAt: IsoTime,
  verifier: z.string(),
  ref: z.string(),
});
export type DeletionEvidence = z.infer<typeof DeletionEvidence>;

/**
 * Identical content the job did not delete (§8.3): another live record of the same subject
 * holding the same bytes. It is that record's own copy, not one derived from the deleted
 * records, so it never fails the job; the receipt names it (ids only) so that the requester
 * can delete it too (`DELETE /v1/memories/{id}?scope=content`). Other subjects' records are
 * never named.
 */
export const DeletionResidual = z.object({ recordId: Id, reason: z.enum(['identical_content']) }).strict();
export type DeletionResidual = z.infer<typeof DeletionResidual>;

/**
 * GET /v1/deletion-jobs: a tenant's jobs (an administrator's view) or the caller's own, requested
 * at or after `since`, oldest first unless `order=newest` (the default stays oldest: clients that
 * page with cursors keep their order); `subjectId` narrows what the caller may see to one
 * subject's jobs; `cursor` continues a listing (the `nextCursor` of its previous page, same order).
 */
export const DeletionJobListQuery = z.object({
  status: z.enum(['invalidating', 'verifying', 'verified', 'failed']).optional(),
  since: IsoTime.optional(),
  order: z.enum(['oldest', 'newest']).optional(),
  subjectId: SubjectId.optional(),
  cursor: z.string().regex(/^[A-Za-z0-9_-]{1,1000}$/, 'not a cursor of this listing').optional(),
  limit: z.string().regex(/^(100|[1-9][0-9]?)$/, 'a whole number from 1 to 100').transform(Number).optional(),
}).strict();
export type DeletionJobListQuery = z.infer<typeof DeletionJobListQuery>;

export const DeletionJob = z.object({
  jobId: Id,
  tenant: Id,
  subjectId: SubjectId,
  recordIds: z.array(Id),
  mode: z.enum(['revoke', 'delete', 'forget']),
  requestedBy: z.object({ agentId: Id, principalId: Id }),
  requestedAt: IsoTime,
  policyRevision: z.number().int(),
  targets: z.array(DeletionTarget),
  status: DeletionJobStatus,
  deadline: IsoTime,
  evidence: z.array(DeletionEvidence),
  failureReason: z.string().optional(),
  /**
   * The subject was on legal hold when the job opened, or was put on hold before the job purged
   * (then what the targets already removed stays removed, and the sealed event log keeps the
   * content): records are tombstoned (reads deny) and every derived copy is removed, but the
   * content is kept — no purge, no key destroyed. `reason` only for those who may read holds
   * (the tenant's administrators, §8.4).
   */
  legalHold: z.object({ holdId: Id, reason: z.string().optional() }).optional(),
  /** Opened when the legal hold that made `jobId` keep its content was released: purges what it kept. */
  continues: z.object({ jobId: Id, holdId: Id }).optional(),
  /** This job kept content for a legal hold, and this job purges it since the hold's release. */
  continuedBy: Id.optional(),
  updatedAt: IsoTime,
  progress: z.object({
    tombstoned: z.array(Id),
    verificationAttempts: z.number().int().min(0),
    nextVerificationAt: IsoTime.optional(),
    findings: z.array(z.string()).optional(),
    /** The last replay's residual: identical content in other live records of the subject (DeletionResidual). */
    residual: z.array(DeletionResidual).optional(),
    /** The replays found nothing and the `key` task (crypto-shredding) was sent; its ack finishes the job. */
    shredding: z.boolean().optional(),
    /** How often in a row what the job waits for was sent again without progress (each wait twice the last, §8.1). */
    resumes: z.number().int().min(1).optional(),
  }),
});
export type DeletionJob = z.infer<typeof DeletionJob>;

export const DeletionJobList = z.object({ items: z.array(DeletionJob), nextCursor: z.string().optional() });
export type DeletionJobList = z.infer<typeof DeletionJobList>;

/**
 * GET /v1/ops/overview (administrators): consumer lag, dead letters and throughput, from the
 * services' metrics and the dead-letter topics (services/retrieval-broker/src/ops/overview.ts).
 */
export const OpsOverview = z.object({
  at: IsoTime,
  consumers: z.array(z.object({
    group: z.string(), topic: z.string(), lag: z.number().int().min(0),
    partitions: z.array(z.object({ partition: z.number().int().min(0), lag: z.number().int().min(0) })),
  })),
  deadLetters: z.array(z.object({ topic: z.string(), parked: z.number().int().min(0) })),
  /** Summed over every source, since each process started. */
  counters: z.object({ writes: z.number().min(0), searches: z.number().min(0), deadLettered: z.number().min(0) }),
  /** Oldest first, a reading every few seconds over the last minutes. */
  history: z.array(z.object({ at: IsoTime, lag: z.number().min(0), writesPerSecond: z.number().min(0), searchesPerSecond: z.number().min(0) })),
  /** Each exposition read: `local` (this process) and any scraped URL; `ok: false` is one that did not answer. */
  sources: z.array(z.object({ source: z.string(), ok: z.boolean() })),
});
export type OpsOverview = z.infer<typeof OpsOverview>;

export const Problem = z.object({
  type: z.string(),
  title: z.string(),
  status: z.number().int(),
  code: z.string(),
  detail: z.string(),
  requestId: z.string().optional(),
});
export type Problem = z.infer<typeof Problem>;

/** One item's outcome in the answer of POST /v1/memories:batch, at its index in the request. */
export const BatchItemOutcome = z.object({
  index: z.number().int().min(0),
  /** What POST /v1/memories would have answered for this item alone. */
  httpStatus: z.number().int(),
  id: Id.optional(),
  version: z.number().int().optional(),
  status: RecordStatus.optional(),
  /** An asynchronous batch (`Prefer: respond-async`): the item's command, to ask GET /v1/commands/{commandId}. */
  commandId: Id.optional(),
  error: Problem.optional(),
});
export type BatchItemOutcome = z.infer<typeof BatchItemOutcome>;
export const WriteMemoryBatchResponse = z.object({ items: z.array(BatchItemOutcome), consistencyToken: z.string() });

/** 202 of an asynchronous write (`Prefer: respond-async`): the command is durably in the log, not yet decided. */
export const AsyncWriteAccepted = z.object({ commandId: Id, consistencyToken: z.string() });

/** GET /v1/commands/{commandId}: how far an asynchronous write got. */
export const CommandStatusResponse = z.object({
  commandId: Id,
  state: z.enum(['pending', 'accepted', 'rejected']),
  id: Id.optional(),
  version: z.number().int().optional(),
  status: RecordStatus.optional(),
  /** What the synchronous write would have answered, when rejected. */
  error: Problem.optional(),
});


/*
 * Administration (§6.2): bodies of the policy routes. The tenant always comes from the
 * capability; a body may name it only to have it checked (a mismatch is impersonation), the
 * same rule as POST /v1/memories. Ids are client-chosen or generated.
 */

/**
 * A time bound of a grant or delegation as an administrator may set it: ISO time within
 * 2000–2199. A date outside that is a typo (a delegation expiring in year 1091), never an intent,
 * and would otherwise be stored as given: a grant void from the start, or one that never ends.
 * The year as written is checked, by a pattern, so the published schema says it too: a client
 * (or a fuzzer) generating from the OpenAPI document stays inside what is accepted.
 */
export const PolicyTime = IsoTime.regex(/^2[01]\d\d-/, 'a time bound must lie between 2000 and 2199');

/** POST /v1/grants — the grant id is the server's (design §6.2): a grant id names one grant for ever. */
export const AddGrantRequest = Grant.omit({ grantId: true, tenant: true })
  .extend({ tenant: Id.optional(), notBefore: PolicyTime.optional(), notAfter: PolicyTime.optional() })
  .strict()
  .refine((g) => g.notBefore === undefined || g.notAfter === undefined || Date.parse(g.notBefore) < Date.parse(g.notAfter), {
    message: 'notBefore must be before notAfter (the grant would never be valid)', path: ['notAfter'],
  })
  .refine((g) => (g.resource.kind === 'tenant' ? TENANT_ROLES.includes(g.role) : g.role !== 'privacy_officer'), {
    message: 'privacy_officer is a role on the tenant ({kind: "tenant"}); a grant on the tenant is admin or privacy_officer', path: ['role'],
  })
  .refine((g) => g.resource.kind !== 'tenant' || g.restricted.length === 0, {
    message: 'a grant on the tenant opens no restricted partition', path: ['restricted'],
  });
export type AddGrantRequest = z.infer<typeof AddGrantRequest>;

/** POST /v1/delegations — the delegator is the capability's principal. */
export const AddDelegationRequest = Delegation.omit({ delegationId: true, tenant: true, delegatorId: true })
  .extend({ delegationId: Id.optional(), tenant: Id.optional(), delegatorId: Id.optional(), notAfter: PolicyTime.optional() })
  .strict();
export type AddDelegationRequest = z.infer<typeof AddDelegationRequest>;

/** POST /v1/legal-holds */
export const PlaceLegalHoldRequest = LegalHold.omit({ holdId: true, tenant: true })
  .extend({ holdId: Id.optional(), tenant: Id.optional() })
  .strict();
export type PlaceLegalHoldRequest = z.infer<typeof PlaceLegalHoldRequest>;

/** Body of the revoke and remove routes: nothing, or the tenant to be checked. */
export const PolicyActionRequest = z.object({ tenant: Id.optional() }).strict();

export const PolicyRevisionResponse = z.object({ policyRevision: z.number().int().min(0) });
export const GrantCreatedResponse = PolicyRevisionResponse.extend({ grantId: Id });
export const DelegationCreatedResponse = PolicyRevisionResponse.extend({ delegationId: Id });
export const LegalHoldCreatedResponse = PolicyRevisionResponse.extend({ holdId: Id });

/** The answers' and bodies' types, where no type was declared beside the schema. */
export type IssueCapabilityResponse = z.infer<typeof IssueCapabilityResponse>;
export type MutationResponse = z.infer<typeof MutationResponse>;
export type WriteMemoryBatchRequest = z.infer<typeof WriteMemoryBatchRequest>;
export type VersionedRequest = z.infer<typeof VersionedRequest>;
export type RejectRequest = z.infer<typeof RejectRequest>;
export type DeletionAccepted = z.infer<typeof DeletionAccepted>;
export type WriteMemoryBatchResponse = z.infer<typeof WriteMemoryBatchResponse>;
export type AsyncWriteAccepted = z.infer<typeof AsyncWriteAccepted>;
export type CommandStatusResponse = z.infer<typeof CommandStatusResponse>;
export type PolicyActionRequest = z.infer<typeof PolicyActionRequest>;
export type PolicyRevisionResponse = z.infer<typeof PolicyRevisionResponse>;
export type GrantCreatedResponse = z.infer<typeof GrantCreatedResponse>;
export type DelegationCreatedResponse = z.infer<typeof DelegationCreatedResponse>;
export type LegalHoldCreatedResponse = z.infer<typeof LegalHoldCreatedResponse>;
