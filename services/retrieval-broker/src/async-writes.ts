/**
 * Asynchronous writes (`Prefer: respond-async`, RFC 7240): answered 202 once the commands are
 * durably on memory.commands, before write-admission decided them. Each command is recorded as
 * pending first and asks write-admission's reply to carry `storedFor`, so whichever broker
 * instance reads the reply keeps its outcome for GET /v1/commands/{commandId}.
 */
import type { FastifyRequest } from 'fastify';
import type { CapabilityClaims, MemoryCommand } from '@gm/contracts';
import type { Positions } from './consistency-token.ts';
import type { BrokerDeps } from './deps.ts';

export const PREFERENCE_APPLIED_HEADER = 'preference-applied';

/** Whether the request prefers an asynchronous answer (`Prefer: respond-async`, among other preferences). */
export function prefersAsync(request: FastifyRequest): boolean {
  const raw = request.headers.prefer;
  const values = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  return values.some((value) => value.split(',').some((preference) => preference.split(';')[0]?.trim().toLowerCase() === 'respond-async'));
}

/** Records the commands as pending, then appends them; returns where they landed (per commands partition). */
export async function postAsync(deps: BrokerDeps, claims: CapabilityClaims, commands: MemoryCommand[]): Promise<Positions> {
  for (const command of commands) command.metadata.storeOutcome = true;
  await deps.state.commands.pending(claims.tenant, commands.map((c) => ({ commandId: c.metadata.commandId, principalId: claims.act.sub })));
  return deps.gateway.post(commands);
}
