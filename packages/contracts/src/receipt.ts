import { z } from 'zod';
import { DeletionJobStatus, DeletionResidual } from './api.ts';
import { Id, IsoTime, Sha256Hex } from './primitives.ts';

/**
 * A deletion receipt (design §8.4): what a finished deletion job did, signed by the
 * receipt-verifier (Ed25519 compact JWS, header `typ: receipt+jws`) and published on
 * `deletion.receipts` and at `GET /v1/deletion-jobs/{id}/receipt`.
 *
 * It carries ids, content commitments, per-target evidence, replay counts and decisions — never
 * content, nor a plain hash of it (one can be checked against a guess). It claims no more than is true:
 * - `retention: 'purged'` means every copy the job targeted (its `targets`) was removed, the
 *   verification replays found nothing, and the `key` target destroyed the records' keys so their
 *   events in memory.events can no longer be decrypted (crypto-shredding, §8.5);
 * - `access_revoked_retained` means the records are tombstoned (no read path returns them) but a
 *   copy is kept on purpose: a revocation (audit), a legal hold, or a job that failed before
 *   it could prove the removal;
 * - `eventLog.holdsContent` is `false` once the keys are destroyed: the log keeps ciphertext that
 *   nothing can open; `true` while a key that opens it exists.
 */
export const RECEIPT_TYPE = 'receipt+jws';

/**
 * A commitment to one deleted record's content: `commitment` = hex HMAC-SHA256 keyed with the
 * record's opening (32 random bytes, one per record per job) over the 32-byte SHA-256 digest of
 * the content's UTF-8 bytes; `null` where the job never learnt the record's content hash.
 * Without the opening it tells nothing about the content; with it, the content checks in one
 * HMAC (docs/deletion.md, "Content commitments").
 */
export const ContentCommitment = z.object({ recordId: Id, commitment: Sha256Hex.nullable() }).strict();
export type ContentCommitment = z.infer<typeof ContentCommitment>;

/** The opening of one record's commitment (hex, 32 bytes): given to the job's requester only, never signed or published. */
export const ContentOpening = z.object({ recordId: Id, opening: Sha256Hex }).strict();
export type ContentOpening = z.infer<typeof ContentOpening>;

export const ReceiptRetention = z.enum(['purged', 'access_revoked_retained']);
export type ReceiptRetention = z.infer<typeof ReceiptRetention>;

/**
 * What is physically true of a copy's deleted bytes once a job removed them (§8.4): `erased` —
 * gone from every file of the copy (SQLite: secure_delete zeroed them, the WAL was checkpointed
 * and truncated); `pending_compaction` — unreadable through every path, but still in the store's
 * files until it compacts (an Elasticsearch segment merge; SQLite without secure_delete or with a
 * WAL a reader held); `memory_only` — gone from memory, while the store's persistence files (Redis
 * AOF/RDB) keep them until they are rewritten.
 */
export const CopyErasureState = z.enum(['erased', 'pending_compaction', 'memory_only']);
export type CopyErasureState = z.infer<typeof CopyErasureState>;
export const CopyErasure = z.object({ copy: z.string(), state: CopyErasureState, note: z.string() }).strict();
export type CopyErasure = z.infer<typeof CopyErasure>;

export const DeletionReceipt = z
  .object({
    receiptId: Id,
    jobId: Id,
    tenant: Id,
    mode: z.enum(['revoke', 'delete', 'forget']),
    subjectId: Id.optional(),
    recordIds: z.array(Id),
    /**
     * Per record, a commitment to its content (`ContentCommitment`): only the requester, who gets
     * the openings, can show which content it covers. Absent in receipts signed before commitments.
     */
    contentCommitments: z.array(ContentCommitment).optional(),
    /** Receipts signed before commitments only: the plain sha256 of each record's content. Never in new receipts. */
    contentHashes: z.array(z.object({ recordId: Id, sha256: Sha256Hex.nullable() }).strict()).optional(),
    requestedBy: z.object({ agentId: Id, principalId: Id }).strict(),
    requestedAt: IsoTime,
    completedAt: IsoTime,
    policyRevision: z.number().int().min(0),
    targets: z.array(
      z.object({ target: z.string(), status: z.enum(['done', 'failed', 'missing']), completedAt: IsoTime.nullable(), ref: z.string() }).strict(),
    ),
    /**
     * The verification replays: how many probes ran, the last run's counts per probe kind (`ref`,
     * the verification evidence), how many runs, what still found something (path:id), and the
     * residual: identical content in other live records of the subject, which the job did not
     * delete (absent in receipts signed before it was reported).
     */
    replay: z.object({
      probes: z.number().int().min(0).nullable(), ref: z.string(), attempts: z.number().int().min(0), findings: z.array(z.string()),
      residual: z.array(DeletionResidual).optional(),
    }).strict(),
    status: DeletionJobStatus.extract(['verified', 'failed']),
    failureReason: z.string().optional(),
    retention: ReceiptRetention,
    retentionReason: z.string().optional(),
    /** The hold that kept the content; its reason is for those who may read holds, never in a receipt (older ones carry it). */
    legalHold: z.object({ holdId: Id, reason: z.string().optional() }).strict().optional(),
    eventLog: z.object({ holdsContent: z.boolean(), note: z.string() }).strict(),
    /** Per copy outside the log, what is physically true of the deleted bytes (absent in receipts signed before it was stated, and when no key was destroyed). */
    copies: z.array(CopyErasure).optional(),
    issuedAt: IsoTime,
    issuer: z.string(),
  })
  .strict();
export type DeletionReceipt = z.infer<typeof DeletionReceipt>;

/** A receipt as stored (state store, by jobId) and published on `deletion.receipts`. */
export const SignedReceipt = z
  .object({ receiptId: Id, jobId: Id, tenant: Id, kid: z.string(), jws: z.string() })
  .strict();
export type SignedReceipt = z.infer<typeof SignedReceipt>;

/**
 * GET /v1/deletion-jobs/{id}/receipt (JSON): the compact JWS and its decoded payload; and, for
 * the principal who requested the job only, while they are kept, the openings of its content
 * commitments (outside the signed payload).
 */
export const ReceiptResponse = z.object({ receipt: z.string(), payload: DeletionReceipt, openings: z.array(ContentOpening).optional() });
export type ReceiptResponse = z.infer<typeof ReceiptResponse>;

/** The public half of a receipt signing key (Ed25519 JWK), as published at `GET /v1/receipt-keys`. */
export const ReceiptPublicKey = z
  .object({ kty: z.literal('OKP'), crv: z.literal('Ed25519'), x: z.string(), kid: z.string().min(1), alg: z.literal('EdDSA'), use: z.literal('sig') })
  .strict();
export type ReceiptPublicKey = z.infer<typeof ReceiptPublicKey>;
