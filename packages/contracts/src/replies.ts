import { z } from 'zod';
import { Id } from './primitives.ts';
import { RecordStatus } from './record.ts';

export const AcceptedResult = z
  .object({
    id: Id.optional(),
    version: z.number().int().min(0).optional(),
    status: RecordStatus.optional(),
    jobId: Id.optional(),
  })
  .strict();
export type AcceptedResult = z.infer<typeof AcceptedResult>;

/** Where a command's last event landed on memory.events: what read-your-writes waits for. */
export const EventPosition = z.object({ partition: z.number().int().min(0), offset: z.number().int().min(0) }).strict();
export type EventPosition = z.infer<typeof EventPosition>;

/** On the reply of a command sent with `storeOutcome`: whose outcome the API keeps, and where. */
export const StoredFor = z.object({ tenantId: Id, principalId: Id }).strict();

export const CommandReply = z.discriminatedUnion('outcome', [
  z.object({ commandId: Id, outcome: z.literal('accepted'), result: AcceptedResult, eventsAt: EventPosition.optional(), storedFor: StoredFor.optional() }).strict(),
  z
    .object({
      commandId: Id,
      outcome: z.literal('rejected'),
      code: z.string(),
      detail: z.string(),
      retriable: z.boolean(),
      storedFor: StoredFor.optional(),
    })
    .strict(),
]);
export type CommandReply = z.infer<typeof CommandReply>;
