/**
 * What a write's answer waits for, as the request prefers it (`Prefer`, RFC 7240; design §9):
 * - by default, until the write is decided and searchable (201, `Read-Your-Writes: confirmed`);
 * - `wait-for=stored`: until it is decided and in the state store (201, `stored`): a read by id
 *   sees it at once, a search once its consistency token is carried;
 * - `respond-async`: answered 202 once the commands are durably on memory.commands, before
 *   write-admission decided them. Each command is recorded as pending first and asks
 *   write-admission's reply to carry `storedFor`, so whichever broker instance reads the reply
 *   keeps its outcome for GET /v1/commands/{commandId}.
 * Both preferences: the sooner answer, `respond-async`. A preference not understood is ignored,
 * as RFC 7240 asks; `Preference-Applied` names the one that was honoured.
 */
import type { FastifyRequest } from 'fastify';
import type { CapabilityClaims, MemoryCommand } from '@gm/contracts';
import type { Positions } from './consistency-token.ts';
import type { BrokerDeps } from './deps.ts';

export const PREFERENCE_APPLIED_HEADER = 'preference-applied';

export type WriteWait = 'searchable' | 'stored' | 'async';

/** The `Preference-Applied` value of each honoured preference. */
export const APPLIED_PREFERENCE = { async: 'respond-async', stored: 'wait-for=stored' } as const;

/** What the request's `Prefer` headers ask a write's answer to wait for (`searchable` when nothing understood). */
export function writeWait(request: FastifyRequest): WriteWait {
  const raw = request.headers.prefer;
  const values = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  // Each preference is `token[=value]` followed by `;` parameters, which no preference here takes.
  const preferences = values.flatMap((value) => value.split(',')).map((preference) => (preference.split(';')[0] ?? '').replace(/\s+/g, '').toLowerCase());
  if (preferences.includes('respond-async')) return 'async';
  if (preferences.some((p) => p === 'wait-for=stored' || p === 'wait-for="stored"')) return 'stored';
  return 'searchable';
}

/** Records the commands as pending, then appends them; returns where they landed (per commands partition). */
export async function postAsync(deps: BrokerDeps, claims: CapabilityClaims, commands: MemoryCommand[]): Promise<Positions> {
  for (const command of commands) command.metadata.storeOutcome = true;
  await deps.state.commands.pending(claims.tenant, commands.map((c) => ({ commandId: c.metadata.commandId, principalId: claims.act.sub })));
  return deps.gateway.post(commands);
}
