import { z } from 'zod';
import { AcceptedResult, Id } from '@gm/contracts';
import type { KeyValueStore, KvWrite } from '../port.ts';
import { keyOf } from '@gm/ids';
import type { KeySpace } from './keys.ts';

/** How long an asynchronous write's outcome can be asked for (GET /v1/commands/{id}). */
export const COMMAND_OUTCOME_TTL_MS = 24 * 60 * 60 * 1000;

/** What GET /v1/commands/{id} answers from: who may ask, and how far the command got. */
export const CommandOutcome = z.discriminatedUnion('state', [
  z.object({ principalId: Id, state: z.literal('pending') }).strict(),
  z.object({ principalId: Id, state: z.literal('accepted'), result: AcceptedResult }).strict(),
  z.object({ principalId: Id, state: z.literal('rejected'), code: z.string(), detail: z.string(), retriable: z.boolean() }).strict(),
]);
export type CommandOutcome = z.infer<typeof CommandOutcome>;

/**
 * Outcomes of asynchronous writes. The API records a command as pending before it sends it;
 * every broker instance's reply listener records the outcome when write-admission's reply says
 * so (`storedFor`). Both are plain overwrites of one key: repeating either is harmless, and a
 * pending entry never replaces an outcome (it is written only if absent).
 */
export class CommandOutcomes {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}

  private key = (tenant: string, commandId: string) => `${this.keys.prefix}cmd:${keyOf(tenant, commandId)}`;

  /** The pending entries of commands about to be sent, in one pipeline. */
  async pending(tenant: string, commands: ReadonlyArray<{ commandId: string; principalId: string }>): Promise<void> {
    const writes: KvWrite[] = commands.map(({ commandId, principalId }) => ({
      op: 'set', key: this.key(tenant, commandId), value: JSON.stringify({ principalId, state: 'pending' } satisfies CommandOutcome),
      ttlMs: COMMAND_OUTCOME_TTL_MS, nx: true,
    }));
    if (writes.length > 0) await this.kv.pipeline(writes);
  }

  async settle(tenant: string, commandId: string, outcome: CommandOutcome): Promise<void> {
    await this.kv.set(this.key(tenant, commandId), JSON.stringify(CommandOutcome.parse(outcome)), { ttlMs: COMMAND_OUTCOME_TTL_MS });
  }

  async get(tenant: string, commandId: string): Promise<CommandOutcome | null> {
    const raw = await this.kv.get(this.key(tenant, commandId));
    return raw === null ? null : CommandOutcome.parse(JSON.parse(raw));
  }
}
