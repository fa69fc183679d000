import { MemoryEvent, TOPICS, readMemoryEvent, type ServiceHandle } from '@gm/contracts';
import type { BatchHandler, Bus, ConsumedMessage, MessageHandler, ProcessContext, SubscriptionSettings } from './port.ts';

type EventSettings = Pick<SubscriptionSettings, 'lingerMs' | 'lingerShare' | 'maxBatchMessages' | 'sends'>;

/**
 * The settings of a group whose handler only writes elsewhere (an index, the state store) and
 * sends nothing back to the log: each commit is a plain group commit. On Kafka a transactional
 * commit costs the broker a transaction (AddOffsetsToTxn, TxnOffsetCommit, EndTxn and its
 * markers) per batch of every group, which synchronous writes, in batches of one, paid several
 * times over (docs/sizing.md). A stale member's commit is still refused (its generation).
 */
export const SENDS_NOTHING = { sends: false } as const satisfies EventSettings;

/**
 * Subscribes a group to memory.events with a typed handler. A message that is not a memory
 * event throws, so the bus retries it and then dead-letters it with its provenance.
 */
export async function subscribeToMemoryEvents(
  bus: Bus, groupId: string, handle: (event: MemoryEvent, message: ConsumedMessage, ctx: ProcessContext) => Promise<void>,
  settings: EventSettings = {},
): Promise<ServiceHandle> {
  const handler: MessageHandler = async (message, ctx) => {
    await handle(readMemoryEvent(message), message, ctx);
  };
  const sub = await bus.subscribe({ groupId, topics: [TOPICS.events], handler, ...settings });
  return { close: () => sub.close() };
}

/** One memory event of a batch, with the message that carried it. */
export interface EventInBatch {
  event: MemoryEvent;
  message: ConsumedMessage;
}

/**
 * Like `subscribeToMemoryEvents`, with a partition's batch of events at once (the bus's batch
 * handler): for work that is cheaper once per batch than once per event. A message that is not
 * a memory event fails the batch; the bus splits it until that message is dead-lettered alone.
 */
export async function subscribeToMemoryEventBatches(
  bus: Bus, groupId: string, handle: (events: readonly EventInBatch[], ctx: ProcessContext) => Promise<void>,
  settings: EventSettings = {},
): Promise<ServiceHandle> {
  const batchHandler: BatchHandler = async (messages, ctx) => {
    const events = messages.map((message) => ({ event: readMemoryEvent(message), message }));
    await handle(events, ctx);
  };
  const sub = await bus.subscribe({ groupId, topics: [TOPICS.events], batchHandler, ...settings });
  return { close: () => sub.close() };
}
