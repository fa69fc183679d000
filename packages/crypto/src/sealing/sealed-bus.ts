import type { Bus, ConsumedMessage, OutgoingMessage, SubscribeOptions } from '@gm/bus';
import type { ContentCodec } from './content-codec.ts';

/**
 * A service's view of the bus in which content on memory.commands and memory.events is sealed
 * on the way in and opened on the way out (issue 7). Services keep handling plaintext; the log
 * — Kafka segments, the SQLite log, their dead letters — only ever holds envelopes.
 */
export function sealedBus(inner: Bus, codec: ContentCodec): Bus {
  const openMessage = async (message: ConsumedMessage): Promise<ConsumedMessage> => {
    const value = await codec.open(message.topic, message.value);
    return value === message.value ? message : { ...message, value };
  };
  async function* opened(messages: AsyncIterable<ConsumedMessage>): AsyncIterable<ConsumedMessage> {
    for await (const message of messages) yield await openMessage(message);
  }
  const sealAll = (messages: OutgoingMessage[]): Promise<OutgoingMessage[]> => Promise.all(messages.map((m) => codec.seal(m)));

  return {
    ensureTopics: (specs) => inner.ensureTopics(specs),
    produce: async (messages) => inner.produce(await sealAll(messages)),
    subscribe: (options: SubscribeOptions) =>
      inner.subscribe({
        ...options,
        handler: async (message, ctx) => {
          const view = await openMessage(message);
          const queued: OutgoingMessage[] = [];
          await options.handler(view, {
            // Sealing is async and send is not: the sends are sealed once the handler is done,
            // still before the bus commits them with the offset.
            send: (messages) => void queued.push(...messages),
            onCommitted: (fn) => ctx.onCommitted(fn),
            onDiscarded: (fn) => ctx.onDiscarded(fn),
          });
          // A handler that forwards the message itself (a dead letter) forwards it as it came: sealed.
          const restored = queued.map((m) => (m.value === view.value && view !== message ? { ...m, value: message.value } : m));
          if (restored.length > 0) ctx.send(await sealAll(restored));
        },
      }),
    waitForCommitted: (groupId, position, timeoutMs) => inner.waitForCommitted(groupId, position, timeoutMs),
    readAll: (topic) => opened(inner.readAll(topic)),
    readPartition: (topic, partition, fromOffset) => opened(inner.readPartition(topic, partition, fromOffset)),
    endOffsets: (topic) => inner.endOffsets(topic),
    committedOffsets: (groupId, topic) => inner.committedOffsets(groupId, topic),
    resetGroup: (groupId) => inner.resetGroup(groupId),
    partitionFor: (topic, key) => inner.partitionFor(topic, key),
    close: () => inner.close(),
  };
}
