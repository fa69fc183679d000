/**
 * Consistency tokens at the HTTP edge (consistency-token.ts): every accepted mutation answers
 * one, and a read that sends one waits until the projections passed it.
 */
import { CONSUMER_GROUPS, GovernedMemoryError } from '@gm/contracts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { READ_YOUR_WRITES_GROUPS, READ_YOUR_WRITES_HEADER, readYourWritesValue } from './command-gateway.ts';
import { CONSISTENCY_TOKEN_HEADER, mergePoints, type ConsistencyPoint, type Positions } from './consistency-token.ts';
import type { BrokerDeps } from './deps.ts';

/** A record read or a search waits for READ_YOUR_WRITES_GROUPS; a summary read for the summaries too. */
export const SUMMARY_GROUPS: readonly string[] = [...READ_YOUR_WRITES_GROUPS, CONSUMER_GROUPS.summaryBuilder];

/** The point the request's token names, checked (a bad token is a 400 before anything else); undefined without one. */
export function requestPoint(deps: BrokerDeps, request: FastifyRequest, tenant: string): ConsistencyPoint | undefined {
  const raw = request.headers[CONSISTENCY_TOKEN_HEADER];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string') throw new GovernedMemoryError('MEM_INVALID_CONSISTENCY_TOKEN', 'Consistency-Token: send one token');
  return deps.tokens.verify(raw, tenant);
}

/**
 * A mutation's answer headers: `Read-Your-Writes`, and its consistency token — where its events
 * landed (or, for an asynchronous write, its commands), merged with the token the request
 * brought (`carried`, checked before the mutation was sent), so a session's token only moves on.
 * Returns the token.
 */
export function answerMutation(
  deps: BrokerDeps, reply: FastifyReply, tenant: string, carried: ConsistencyPoint | undefined,
  result: { readYourWrites?: boolean; storedOnly?: boolean; landed?: Positions; commands?: Positions },
): string {
  const own: ConsistencyPoint = { tenant, events: result.landed ?? new Map(), commands: result.commands ?? new Map() };
  const token = deps.tokens.issue(carried === undefined ? own : mergePoints(carried, own));
  if (result.readYourWrites !== undefined) {
    reply.header(READ_YOUR_WRITES_HEADER, readYourWritesValue({ readYourWrites: result.readYourWrites, ...(result.storedOnly === true ? { storedOnly: true } : {}) }));
  }
  reply.header(CONSISTENCY_TOKEN_HEADER, token);
  return token;
}

/**
 * Before a read: with a token, waits (bounded) until `groups` passed it, and answers the events
 * they passed (an asynchronous write's commands resolved to the events that followed them); past
 * the bound, 503 MEM_NOT_YET_CONSISTENT, retriable. Undefined without a token.
 */
export async function awaitConsistency(deps: BrokerDeps, request: FastifyRequest, tenant: string, groups: readonly string[]): Promise<Positions | undefined> {
  const point = requestPoint(deps, request, tenant);
  if (point === undefined) return undefined;
  const passed = await deps.gateway.waitForPoint(point, groups, deps.config.readYourWritesTimeoutMs);
  if (passed !== undefined) return passed;
  throw new GovernedMemoryError('MEM_NOT_YET_CONSISTENT', 'the projections have not yet passed this consistency token; retry', { retriable: true });
}
