import { GovernedMemoryError } from '@gm/contracts';
import { WrappedKey } from './keys.ts';

/** Validates a put the same way in every adapter, before anything is written. */
export function checkPut(keyId: string, wrapped: WrappedKey): WrappedKey {
  const parsed = WrappedKey.safeParse(wrapped);
  if (!parsed.success) throw new GovernedMemoryError('MEM_VALIDATION', `key ${keyId}: not a wrapped key`, { cause: parsed.error });
  if (parsed.data.kid !== keyId) {
    throw new GovernedMemoryError('MEM_VALIDATION', `key ${keyId}: the wrapped key is ${parsed.data.kid}`);
  }
  return parsed.data;
}

/** Destroyed-key listeners: every one runs; failures are rethrown together afterwards. */
export class Listeners {
  private readonly set = new Set<(keyId: string) => void>();

  add(listener: (keyId: string) => void): () => void {
    this.set.add(listener);
    return () => this.set.delete(listener);
  }

  emit(keyId: string): void {
    const errors: unknown[] = [];
    for (const listener of this.set) {
      try {
        listener(keyId);
      } catch (err) {
        errors.push(err);
      }
    }
    if (errors.length > 0) throw new AggregateError(errors, `destroyed-key listeners failed for ${keyId}`);
  }

  clear(): void {
    this.set.clear();
  }
}
