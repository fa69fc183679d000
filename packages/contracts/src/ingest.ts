/**
 * Kafka-native ingest (docs/ingest.md): platforms produce writes straight onto memory.ingest, and the
 * ingest-gateway admits each one under exactly the rules of POST /v1/memories. Every request
 * whose writer verified gets one result, keyed by its requestId, on its tenant's results topic
 * (`ingestResultsTopic`, design §4.1), naming the tenant and principal the gateway verified.
 */
import { z } from 'zod';
import { WriteMemoryBatchItem } from './api.ts';
import { Id, TenantId } from './primitives.ts';
import { RecordStatus } from './record.ts';

/** The header of a memory.ingest message that carries the writer's capability (the compact JWS, no "Bearer"). */
export const INGEST_CAPABILITY_HEADER = 'capability';

/**
 * The value of a memory.ingest message: the body of POST /v1/memories (with an optional
 * idempotencyKey, as in a batch item) plus the producer's requestId, which keys its result.
 */
export const IngestRequest = WriteMemoryBatchItem.extend({
  /** Chosen by the producer, unique per request; its result carries it as key. */
  requestId: Id,
}).strict();
export type IngestRequest = z.infer<typeof IngestRequest>;

/**
 * Who a result answers: the tenant and the principal of the capability the gateway verified. A
 * requestId is the producer's choice, so another writer may use it too; a collector takes only
 * results naming its own tenant, principal and requestId (design §4.1).
 */
const Answered = { tenant: TenantId, principal: Id, requestId: Id };

/** One result per request on its tenant's results topic: what POST /v1/memories would have answered. */
export const IngestResult = z.discriminatedUnion('outcome', [
  z.object({
    ...Answered,
    outcome: z.literal('accepted'),
    /** The command write-admission decided; GET /v1/commands is not needed for it. */
    commandId: Id,
    id: Id,
    version: z.number().int().min(0),
    status: RecordStatus,
  }).strict(),
  z.object({
    ...Answered,
    outcome: z.literal('rejected'),
    /** The problem code POST /v1/memories would have answered (CAP_REVOKED, MEM_CONFLICT, …). */
    code: z.string(),
    /** Names rules and fields, never values sent. */
    detail: z.string(),
    /** Whether the same request may succeed later (a retriable rejection is never a permanent no). */
    retriable: z.boolean(),
    /** Absent when the gateway rejected the request before any command existed. */
    commandId: Id.optional(),
  }).strict(),
]);
export type IngestResult = z.infer<typeof IngestResult>;
