/** Checks both vector adapters make before anything is written or searched. */
import { GovernedMemoryError } from '@gm/contracts';

export function validVector(v: Float32Array, field: string): Float32Array {
  if (!(v instanceof Float32Array) || v.length === 0 || !v.every(Number.isFinite)) {
    throw new GovernedMemoryError('MEM_VALIDATION', `${field} must be a non-empty Float32Array of finite numbers`);
  }
  return v;
}

export function epochMsOf(iso: string, field: string): number {
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) throw new GovernedMemoryError('MEM_VALIDATION', `${field} is not a valid time`);
  return ms;
}
