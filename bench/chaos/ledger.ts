/**
 * What the fault suite's load saw (docs/reliability.md "The fault suite"): every answer, every
 * acknowledged write, every search result, every deletion job and revocation. The invariants
 * are checked against this record and against the logs and stores read directly.
 */

/** How a write was acknowledged: an HTTP 201, a 202 whose command was later accepted, or an ingest result. */
export type WritePath = 'http' | 'async' | 'ingest';

export interface AcknowledgedWrite {
  path: WritePath;
  /** The idempotency key (HTTP), or the ingest request id. */
  key: string;
  tenant: string;
  id: string;
  version: number;
  subjectId: string;
  /** The resource the write went to: `readable` is the searcher's, `hidden` is not. */
  resource: 'readable' | 'hidden';
  /** When the attempt that succeeded started, and when its answer arrived (ms on the run's clock). */
  startedAt: number;
  at: number;
  /** The body sent, so an idempotent retry can send it again. */
  body: Record<string, unknown>;
}

/** One HTTP answer (or a failure to get one) of any route. */
export interface Answer {
  at: number;
  /** How long the answer took, ms. */
  ms: number;
  route: string;
  status: number;
  /** `application/problem+json` */
  problem: boolean;
  retryAfter: boolean;
  code?: string;
  /** Set when no answer arrived at all (connection refused or reset, a client timeout). */
  networkError?: string;
}

export interface SearchSample {
  startedAt: number;
  ids: string[];
}

export interface DeletionRequest {
  jobId: string;
  mode: 'delete' | 'forget';
  /** The records it covers as the load knows them. */
  recordIds: string[];
  at: number;
}

/** A capability revoked (or a grant removed) and the reads with it afterwards. */
export interface Revocation {
  kind: 'capability' | 'grant';
  acknowledgedAt: number;
  /** Reads after the acknowledgement that still saw records (must be none). */
  readsAfter: number;
  leakedAfter: number;
}

export interface Ledger {
  answers: Answer[];
  writes: AcknowledgedWrite[];
  /** Writes the load gave up on (never acknowledged: not a loss, but counted). */
  abandoned: number;
  /** Asynchronous writes answered 202 (durably in the log): each must end accepted. */
  asyncCommands: Array<{ commandId: string; key: string; subjectId: string; body: Record<string, unknown>; at: number }>;
  /** Ingest requests whose produce Kafka acknowledged: each must get an accepted result. */
  ingestProduced: Map<string, { subjectId: string; body: Record<string, unknown>; at: number }>;
  searches: SearchSample[];
  deletions: DeletionRequest[];
  /**
   * Records a delete was sent for, answered or not: a DELETE answered 503 may still have been
   * admitted (the outcome of a timed-out command is unknown), so its record may be gone.
   */
  deleteAttempted: Set<string>;
  revocations: Revocation[];
}

export const emptyLedger = (): Ledger => ({
  answers: [], writes: [], abandoned: 0, asyncCommands: [], ingestProduced: new Map(), searches: [], deletions: [], deleteAttempted: new Set(), revocations: [],
});
