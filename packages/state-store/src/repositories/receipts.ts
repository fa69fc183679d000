import { ContentOpening, ReceiptPublicKey, SignedReceipt, Sha256Hex } from '@gm/contracts';
import { z } from 'zod';
import type { KeyValueStore } from '../port.ts';
import { keyOf } from '@gm/ids';
import { memberOf, partsOfMember, type KeySpace } from './keys.ts';

/** A record's content commitment and its opening, as kept for the job's requester (§8.4). */
export const KeptOpening = ContentOpening.extend({ commitment: Sha256Hex }).strict();
export type KeptOpening = z.infer<typeof KeptOpening>;

/**
 * Signed deletion receipts (§8.4), one per job, and the public keys that signed them.
 * Receipts are not projections of memory.events: replay leaves them alone.
 */
export class DeletionReceipts {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}

  private key = (tenant: string, jobId: string) => `${this.keys.prefix}receipt:${keyOf(tenant, jobId)}`;
  private publishedKey = (tenant: string, jobId: string) => `${this.keys.prefix}receipt-published:${keyOf(tenant, jobId)}`;
  private pendingKey = () => `${this.keys.prefix}receipts-pending`;
  private signingKey = (kid: string) => `${this.keys.prefix}receipt-key:${keyOf(kid)}`;
  private signingKeys = () => `${this.keys.prefix}receipt-keys`;

  /**
   * Stores the job's receipt unless one exists; returns the receipt that is stored (the first
   * one). Two verifier instances signing the same job at once therefore agree on one receipt.
   */
  async putOnce(receipt: SignedReceipt): Promise<SignedReceipt> {
    const created = await this.kv.set(this.key(receipt.tenant, receipt.jobId), JSON.stringify(receipt), { nx: true });
    await this.kv.srem(this.pendingKey(), [memberOf(receipt.tenant, receipt.jobId)]);
    if (created) return receipt;
    return (await this.get(receipt.tenant, receipt.jobId)) ?? receipt;
  }

  async get(tenant: string, jobId: string): Promise<SignedReceipt | null> {
    const raw = await this.kv.get(this.key(tenant, jobId));
    return raw === null ? null : SignedReceipt.parse(JSON.parse(raw));
  }

  /** The receipt's message on deletion.receipts was committed: a later duplicate task sends nothing. */
  markPublished = async (tenant: string, jobId: string) => {
    await this.kv.set(this.publishedKey(tenant, jobId), '1');
  };

  isPublished = async (tenant: string, jobId: string) => (await this.kv.exists([this.publishedKey(tenant, jobId)])) > 0;

  /** A finished job whose receipt is still to be made: the orchestrator re-asks until it exists. */
  expect = async (tenant: string, jobId: string) => {
    await this.kv.sadd(this.pendingKey(), [memberOf(tenant, jobId)]);
  };

  async pending(): Promise<Array<{ tenant: string; jobId: string }>> {
    return (await this.kv.smembers(this.pendingKey())).flatMap((member) => {
      const [tenant, jobId] = partsOfMember(member);
      return tenant && jobId ? [{ tenant, jobId }] : [];
    });
  }

  /**
   * Keeps each record's commitment and opening for the job unless one is kept already (the
   * first one wins: a repeated verification pass or receipt task never changes a commitment),
   * for `ttlMs`: long enough for the requester to fetch them with its receipt, not forever.
   */
  async keepOpenings(tenant: string, jobId: string, entries: readonly KeptOpening[], ttlMs: number): Promise<void> {
    if (entries.length === 0) return;
    await this.kv.pipeline(entries.map((e) => ({
      op: 'set' as const, key: this.keys.receiptOpening(tenant, jobId, e.recordId), value: JSON.stringify(e), ttlMs, nx: true,
    })));
  }

  /** The kept commitments and openings of the job's records, by record id (absent once their TTL passed). */
  async openings(tenant: string, jobId: string, recordIds: readonly string[]): Promise<Map<string, KeptOpening>> {
    const raws = await this.kv.mget(recordIds.map((id) => this.keys.receiptOpening(tenant, jobId, id)));
    const kept = new Map<string, KeptOpening>();
    for (const raw of raws) {
      if (raw === null) continue;
      const entry = KeptOpening.parse(JSON.parse(raw));
      kept.set(entry.recordId, entry);
    }
    return kept;
  }

  /** Publishes a signing key's public half (by kid) for `GET /v1/receipt-keys`. */
  async publishKey(publicJwk: ReceiptPublicKey): Promise<void> {
    await this.kv.set(this.signingKey(publicJwk.kid), JSON.stringify(publicJwk));
    await this.kv.sadd(this.signingKeys(), [publicJwk.kid]);
  }

  /** Every public key that ever signed receipts here, by kid (old receipts stay verifiable). */
  async publicKeys(): Promise<ReceiptPublicKey[]> {
    const kids = (await this.kv.smembers(this.signingKeys())).sort();
    const raws = await this.kv.mget(kids.map((kid) => this.signingKey(kid)));
    return raws.flatMap((raw) => (raw === null ? [] : [ReceiptPublicKey.parse(JSON.parse(raw))]));
  }
}
