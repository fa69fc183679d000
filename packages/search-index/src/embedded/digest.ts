import { createHash } from 'node:crypto';
import type { IndexDocument } from '../port.ts';

export type DigestEntry = Pick<IndexDocument, 'tenantId' | 'recordId' | 'version' | 'contentHash' | 'partition'>;

/**
 * The index digest of the port: sha256 hex over one line per document,
 * `tenant|id|version|contentHash|partition`, lines sorted by UTF-16 code unit and joined by
 * "\n" (no trailing newline). Kept free of SQLite so every adapter can compute the identical
 * value and a verifier can compare runtimes.
 */
export function indexDigest(entries: Iterable<DigestEntry>): string {
  const lines: string[] = [];
  for (const e of entries) {
    lines.push(`${e.tenantId}|${e.recordId}|${e.version}|${e.contentHash}|${e.partition}`);
  }
  lines.sort();
  return createHash('sha256').update(lines.join('\n'), 'utf8').digest('hex');
}
