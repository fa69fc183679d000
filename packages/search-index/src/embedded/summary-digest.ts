import { createHash } from 'node:crypto';
import { GovernedMemoryError } from '@gm/contracts';
import type { ScopeSummaries, Summary, SummaryKey } from '../summary-port.ts';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/**
 * The summary digest of the port: sha256 hex over one line per summary,
 * `tenant|partition|subject|purpose|sha256(text)|expiresAt|id@version#hash,…`, lines sorted and
 * joined by "\n". updatedAt is left out: a replay rebuilds the same summaries at other times.
 */
export function summaryDigest(summaries: Iterable<Omit<Summary, 'updatedAt'>>): string {
  const lines: string[] = [];
  for (const s of summaries) {
    const sources = s.derivedFrom.map((d) => `${d.recordId}@${d.version}#${d.contentHash}`).sort().join(',');
    lines.push(`${s.tenantId}|${s.partition}|${s.subjectId}|${s.purpose}|${sha256(s.text)}|${s.expiresAt}|${sources}`);
  }
  lines.sort();
  return sha256(lines.join('\n'));
}

export function epochMs(iso: string, field: string): number {
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) throw new GovernedMemoryError('MEM_VALIDATION', `${field} is not a valid time`);
  return ms;
}

/** Checks a replace() batch before anything is written: same scope, one per purpose, valid times. */
export function checkReplace(tenantId: string, partition: string, subjectId: string, summaries: Summary[]): void {
  const purposes = new Set<string>();
  for (const s of summaries) {
    if (s.tenantId !== tenantId || s.partition !== partition || s.subjectId !== subjectId) {
      throw new GovernedMemoryError('MEM_VALIDATION', 'a summary outside the (tenant, partition, subject) being replaced');
    }
    if (purposes.has(s.purpose)) throw new GovernedMemoryError('MEM_VALIDATION', 'two summaries for one purpose');
    purposes.add(s.purpose);
    epochMs(s.expiresAt, 'expiresAt');
    epochMs(s.updatedAt, 'updatedAt');
  }
}

export const compareKeys = (a: SummaryKey, b: SummaryKey): number => {
  const ka = [a.tenantId, a.partition, a.subjectId, a.purpose];
  const kb = [b.tenantId, b.partition, b.subjectId, b.purpose];
  for (let i = 0; i < ka.length; i += 1) {
    const x = ka[i] ?? '';
    const y = kb[i] ?? '';
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
};

/** `checkReplace` of every scope of a replaceMany, and no scope twice (which of the two would win?). */
export function checkReplaceMany(tenantId: string, scopes: readonly ScopeSummaries[]): void {
  const seen = new Set<string>();
  for (const { partition, subjectId, summaries } of scopes) {
    const key = `${partition}\u0000${subjectId}`;
    if (seen.has(key)) throw new GovernedMemoryError('MEM_VALIDATION', 'one (partition, subject) twice in one replaceMany');
    seen.add(key);
    checkReplace(tenantId, partition, subjectId, summaries);
  }
}
