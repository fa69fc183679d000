import { z } from 'zod';
import { DeletionJobStatus, DeletionResidual } from './api.ts';
import { Id, IsoTime, Sha256Hex } from './primitives.ts';

/**
 * A deletion receipt (design §8.4): what a finished deletion job did, signed by the
 * receipt-verifier (Ed25519 compact JWS, header `typ: receipt+jws`) and published on
 * `deletion.receipts` and at `GET /v1/deletion-jobs/{id}/receipt`.
 *
 * It carries ids, content hashes, per-target evidence, replay counts and decisions — never
 * content. It claims no more than is true:
 * - `retention: 'purged'` means every copy the job targeted (its `targets`) was removed, the
 *   verification replays found nothing, and the `key` target destroyed the records' keys so their
 *   events in memory.events can no longer be decrypted (crypto-shredding, issue 7);
 * - `access_revoked_retained` means the records are tombstoned (no read path returns them) but a
 *   copy is kept on purpose: a revocation (audit), a legal hold, or a job that failed before
 *   it could prove the removal;
 * - `eventLog.holdsContent` is `false` once the keys are destroyed: the log keeps ciphertext that
 *   nothing can open; `true` while a key that opens it exists.
 */
export const RECEIPT_TYPE = 'receipt+jws';

export const ReceiptRetention = z.enum(['purged', 'access_revoked_retained']);
export type ReceiptRetention = z.infer<typeof ReceiptRetention>;

export const DeletionReceipt = z
  .object({
    receiptId: Id,
    jobId: Id,
    tenant: Id,
    mode: z.enum(['revoke', 'delete', 'forget']),
    subjectId: Id.optional(),
    recordIds: z.array(Id),
    /** sha256 of each record's content as recorded in its state when written (never the content). */
    contentHashes: z.array(z.object({ recordId: Id, sha256: Sha256Hex.nullable() }).strict()),
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
    legalHold: z.object({ holdId: Id, reason: z.string().optional() }).strict().optional(),
    eventLog: z.object({ holdsContent: z.boolean(), note: z.string() }).strict(),
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

/** GET /v1/deletion-jobs/{id}/receipt (JSON): the compact JWS and its decoded payload. */
export const ReceiptResponse = z.object({ receipt: z.string(), payload: DeletionReceipt });
export type ReceiptResponse = z.infer<typeof ReceiptResponse>;

/** The public half of a receipt signing key (Ed25519 JWK), as published at `GET /v1/receipt-keys`. */
export const ReceiptPublicKey = z
  .object({ kty: z.literal('OKP'), crv: z.literal('Ed25519'), x: z.string(), kid: z.string().min(1), alg: z.literal('EdDSA'), use: z.literal('sig') })
  .strict();
export type ReceiptPublicKey = z.infer<typeof ReceiptPublicKey>;
