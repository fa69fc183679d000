import type { RecordMeta } from '@gm/contracts';
import { recordPartition } from '@gm/domain';
import type { IndexDocument } from '@gm/search-index';

/** The search index's copy of a record: its metadata and the content it is found by. */
export function toIndexDocument(meta: RecordMeta, content: string): IndexDocument {
  return {
    tenantId: meta.tenantId,
    recordId: meta.id,
    partition: recordPartition(meta),
    subjectId: meta.subjectId,
    kind: meta.kind,
    purposes: meta.purposes,
    content,
    contentHash: meta.contentHash,
    confidence: meta.confidence,
    createdAt: meta.createdAt,
    expiresAt: meta.expiresAt,
    version: meta.version,
    provenance: meta.provenance,
  };
}
