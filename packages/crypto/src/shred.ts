import type { KeyStore, TombstoneOutcome } from './key-store.ts';
import type { Keyring } from './keyring.ts';
import { dataKeyId, isKekId, isSnapshotDataKeyId } from './keys.ts';

export interface ShredRequest {
  tenantId: string;
  recordIds: string[];
  /** A forget: also destroy the subject's KEKs that protect nothing outside these records. */
  subjectKeys: boolean;
}

export interface ShredResult {
  /** Data keys destroyed now or before (every record's key is gone when this returns). */
  dataKeys: number;
  /** KEKs destroyed. */
  keks: number;
  /** KEKs kept because they still wrap data keys of other records (e.g. records under legal hold). */
  keksKept: number;
  /** What the key store still holds of the destroyed keys: the worst of their tombstones. */
  keyResidue: TombstoneOutcome['residue'];
  /** SQLite: WAL checkpoints the tombstones took (one each when no reader was in the way). */
  checkpoints: number;
}

/**
 * Crypto-shreds records (§8.5): their data keys are destroyed, so their content in the log
 * can never be decrypted again; siblings keep theirs. For a forget, each KEK that wrapped them is
 * destroyed too once no other record depends on it — destroying a KEK that still protects a
 * record outside the job would erase that record as a side effect. KEKs go before data keys: a
 * retry after a crash still finds the data keys and so which KEKs they named.
 */
export async function shredRecords(keyring: Keyring, store: KeyStore, request: ShredRequest): Promise<ShredResult> {
  const kids = request.recordIds.map((id) => dataKeyId(request.tenantId, id));
  const result: ShredResult = { dataKeys: 0, keks: 0, keksKept: 0, keyResidue: 'none', checkpoints: 0 };
  const destroyed = (outcome: TombstoneOutcome): void => {
    if (outcome.residue !== 'none') result.keyResidue = outcome.residue;
    result.checkpoints += outcome.checkpoints ?? 0;
  };
  if (request.subjectKeys) {
    const keks = new Set<string>();
    for (const kid of kids) {
      const found = await store.get(kid);
      if (found.status === 'present' && isKekId(found.wrapped.wrappedBy)) keks.add(found.wrapped.wrappedBy);
    }
    if (keks.size > 0) {
      const mine = new Set(kids);
      const dependents = new Map<string, number>();
      for (const wrapped of await store.all()) {
        // write-admission's snapshot key of the generation protects no record: it goes with the KEK (§8.5).
        if (wrapped.kind === 'dk' && keks.has(wrapped.wrappedBy) && !mine.has(wrapped.kid) && !isSnapshotDataKeyId(wrapped.kid)) {
          dependents.set(wrapped.wrappedBy, (dependents.get(wrapped.wrappedBy) ?? 0) + 1);
        }
      }
      for (const kek of keks) {
        if ((dependents.get(kek) ?? 0) > 0) {
          result.keksKept += 1;
          continue;
        }
        destroyed(await keyring.destroyKey(kek));
        result.keks += 1;
      }
    }
  }
  for (const kid of kids) {
    destroyed(await keyring.destroyKey(kid));
    result.dataKeys += 1;
  }
  return result;
}
