/**
 * The ingest-gateway (docs/ingest.md): admits what platforms produce onto memory.ingest under exactly
 * the rules of POST /v1/memories (@gm/write-edge): the capability in the message's header is
 * verified, revocation checked, the producer's proof of its key checked (producer-auth.ts),
 * impersonation and scope refused, the PDP asked, ids claimed.
 * Each admitted request becomes a WriteMemory command, sent in the transaction that commits the
 * gateway's offsets, so a crash admits a request once or not at all. Its one result follows on
 * its tenant's results topic (results.ts, design §4.1): the gateway's rejection, or
 * write-admission's decision. Each verified principal is held to the HTTP edge's rate limit
 * (rate-limit.ts).
 */
import { deadLetterOf, withMessageContext, type BatchHandler, type Bus, type ConsumedMessage, type OutgoingMessage } from '@gm/bus';
import {
  CONSUMER_GROUPS, GovernedMemoryError, INGEST_CAPABILITY_HEADER, Id, OPERATIONS, TOPICS, isDependencyOutage, subjectKey,
  type CapabilityClaims, type ServiceHandle,
} from '@gm/contracts';
import type { Logger, Metrics } from '@gm/observability';
import type { CapabilityVerifier, PolicyDecisionPoint } from '@gm/policy';
import { admitWrites, writeAuthority, type WriteEdgeDeps } from '@gm/write-edge';
import { z } from 'zod';
import { authenticateProducer, type ProducerAuthConfig } from './producer-auth.ts';
import { rateLimited, withinRateLimit, type IngestRateLimit } from './rate-limit.ts';
import { TenantResultTopics, rejection } from './results.ts';

export const INGEST_GATEWAY_GROUP = CONSUMER_GROUPS.ingestGateway;

/** The authorization table's declaration of this edge: the same action and resource as POST /v1/memories. */
const GUARD = OPERATIONS['KAFKA memory.ingest'];

export interface IngestGatewayDeps extends WriteEdgeDeps {
  bus: Bus;
  pdp: PolicyDecisionPoint;
  verifier: CapabilityVerifier;
  log: Logger;
  metrics: Metrics;
  /** How a message's producer is authenticated (producer-auth.ts). */
  producers: ProducerAuthConfig;
  rateLimit: IngestRateLimit;
}

/** What a message must have before it can be answered at all: an object with a requestId to key its result. */
const Envelope = z.looseObject({ requestId: Id });

/** A request the gateway can answer, waiting for its capability's group to be admitted. */
interface Pending {
  at: number;
  message: ConsumedMessage;
  requestId: string;
  item: Record<string, unknown>;
}

export async function startIngestGateway(deps: IngestGatewayDeps): Promise<ServiceHandle> {
  const sub = await deps.bus.subscribe({ groupId: INGEST_GATEWAY_GROUP, topics: [TOPICS.ingest], batchHandler: ingestHandler(deps) });
  return { close: () => sub.close() };
}

/** One partition's batch of requests: answered in offset order, each on its own. */
export function ingestHandler(deps: IngestGatewayDeps): BatchHandler {
  const { metrics, log } = deps;
  const resultTopics = new TenantResultTopics(deps.bus);
  return async (messages, ctx) => {
    const answers: OutgoingMessage[][] = messages.map(() => []);
    // Counted once the transaction holding them commits: a retried batch is not counted twice.
    const counts: Array<{ outcome: 'admitted' | 'rejected'; code: string }> = [];
    let deadLettered = 0;
    const rejected = (claims: CapabilityClaims, requestId: string, err: GovernedMemoryError): OutgoingMessage => {
      counts.push({ outcome: 'rejected', code: err.code });
      return rejection(claims, requestId, err);
    };
    // One verification per distinct capability of the batch; its requests are admitted together.
    const byCapability = new Map<string, Pending[]>();
    messages.forEach((message, at) => {
      const envelope = Envelope.safeParse(message.value);
      if (!envelope.success) {
        answers[at] = [deadLetter(message, 'not an ingest request: a JSON object with a requestId (ids: 1–128 of letters, digits and . _ : @ -) is required')];
        deadLettered += 1;
        log.warn({ topic: message.topic, partition: message.partition, offset: message.offset }, 'unanswerable ingest message dead-lettered');
        return;
      }
      const { requestId, ...body } = envelope.data;
      // A request's id is its idempotency key unless it names one: a request produced twice
      // (a platform's retry) is answered with the first one's result, never a second record.
      const item = body.idempotencyKey === undefined ? { ...body, idempotencyKey: requestId } : body;
      const token = message.headers[INGEST_CAPABILITY_HEADER] ?? '';
      const group = byCapability.get(token) ?? [];
      if (group.length === 0) byCapability.set(token, group);
      group.push({ at, message, requestId, item });
    });
    const writers: Array<{ claims: CapabilityClaims; pending: Pending[] }> = [];
    for (const [token, group] of byCapability) {
      // No verified writer, so no result: a result keyed by a requestId anyone may choose let
      // a producer without any capability — or a reader of the topic replaying a message — answer
      // another's request first (docs/security.md). Dead-lettered and counted by code instead.
      const refuse = (p: Pending, err: GovernedMemoryError) => {
        counts.push({ outcome: 'rejected', code: err.code });
        answers[p.at] = [deadLetter(p.message, `${err.code}: ${err.message}`)];
        deadLettered += 1;
      };
      const authn = await authenticateProducer(deps, token, group.map((p) => p.message), GUARD.actions[0]);
      if (authn instanceof GovernedMemoryError) {
        for (const p of group) refuse(p, authn);
        continue;
      }
      const pending = group.filter((p, i) => {
        const err = authn.refused[i];
        if (err !== undefined) refuse(p, err);
        return err === undefined;
      });
      if (pending.length > 0) writers.push({ claims: authn.claims, pending });
    }
    const within = await withinRateLimit(deps.rateLimit, deps.clock.now().getTime(), writers.flatMap((w) => w.pending.map(() => w.claims)));
    let counted = 0;
    for (const { claims, pending: verifiedPending } of writers) {
      // The topic exists before anything it will hold is sent: a result, or a command write-admission answers there.
      await resultTopics.ensure(claims.tenant);
      const pending = verifiedPending.filter((p) => {
        if (within[counted++] === true) return true;
        answers[p.at] = [rejected(claims, p.requestId, rateLimited())];
        return false;
      });
      if (pending.length === 0) continue;
      const partitions = await deps.pdp.authorizedPartitions({ claims, action: GUARD.actions[0] });
      const outcomes = await admitWrites(deps, claims, writeAuthority(deps.pdp, claims, partitions), pending.map((p) => p.item));
      outcomes.forEach((outcome, i) => {
        const p = pending[i];
        if (p === undefined) return;
        if (outcome.error !== undefined) {
          // An outage delays the batch (the bus retries it); it never rejects a request.
          if (isDependencyOutage(outcome.error)) throw outcome.error;
          answers[p.at] = [rejected(claims, p.requestId, outcome.error)];
          return;
        }
        const { command } = outcome.write;
        command.metadata.ingestRequestId = p.requestId;
        counts.push({ outcome: 'admitted', code: '' });
        answers[p.at] = [{ topic: TOPICS.commands, key: subjectKey(claims.tenant, command.metadata.subjectId), value: command }];
      });
    }
    // In offset order: requests of one key reach write-admission in the order they were
    // produced. Each request's answer continues its own trace (docs/operations.md#traces).
    answers.forEach((answer, at) => {
      const message = messages[at];
      if (message !== undefined && answer.length > 0) withMessageContext(message, () => ctx.send(answer));
    });
    ctx.onCommitted(() => {
      for (const labels of counts) metrics.ingestRequests.inc(labels);
      if (deadLettered > 0) metrics.deadLetters.inc({ topic: TOPICS.ingest }, deadLettered);
      const refused = counts.filter((c) => c.outcome === 'rejected').length;
      if (refused > 0) log.info({ rejected: refused, admitted: counts.length - refused }, 'ingest requests rejected');
    });
  };
}

/**
 * A message that cannot be answered goes to memory.ingest.dlq with where it came from and why,
 * bounded so that it is always writable (deadLetterOf: 300 KB of control characters is 1.8 MB
 * of JSON, which the broker refused, and the partition waited on it for good). None of its
 * headers travel on: the capability is a credential (and its proof is of no use to anyone).
 */
function deadLetter(message: ConsumedMessage, error: string): OutgoingMessage {
  return deadLetterOf(message, INGEST_GATEWAY_GROUP, error, 1, { copyHeaders: false });
}
