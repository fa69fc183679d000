import { GovernedMemoryError } from '@gm/contracts';
import type { KvWrite } from './port.ts';

/** The argument checks every adapter makes, before a pipeline (or a single write) runs anything. */
export function checkWrite(w: KvWrite): void {
  if (w.op === 'set' && w.ttlMs !== undefined && !(Number.isFinite(w.ttlMs) && w.ttlMs > 0)) {
    throw new GovernedMemoryError('MEM_VALIDATION', 'ttlMs must be a positive number of milliseconds');
  }
  if (w.op === 'incr' && w.ttlMs !== undefined && !(Number.isSafeInteger(w.ttlMs) && w.ttlMs > 0)) {
    throw new GovernedMemoryError('MEM_VALIDATION', 'incr: ttlMs must be a positive integer of milliseconds');
  }
  if (w.op === 'incr' && w.by !== undefined && !(Number.isSafeInteger(w.by) && w.by > 0)) {
    throw new GovernedMemoryError('MEM_VALIDATION', 'incr: by must be a positive integer');
  }
  if (w.op === 'zadd' && Number.isNaN(w.score)) throw new GovernedMemoryError('MEM_VALIDATION', 'zadd: score is not a number');
  if (w.op === 'setIfVersionAtLeast' && !Number.isFinite(w.version)) {
    throw new GovernedMemoryError('MEM_VALIDATION', 'version must be a finite number');
  }
}
