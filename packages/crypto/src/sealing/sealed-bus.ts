import type { Bus, ConsumedMessage, OutgoingMessage, ProcessContext, SubscribeOptions } from '@gm/bus';
import { TOPICS } from '@gm/contracts';
import type { ContentCodec } from './content-codec.ts';

/**
 * A service's view of the bus in which content on memory.commands and memory.events is sealed
 * on the way in and opened on the way out (§8.5). Services keep handling plaintext; the log
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
    subscribe: (options: SubscribeOptions) => {
      const { handler, batchHandler, ...common } = options;
      /**
       * Runs a handler on opened messages. Sealing is async and send is not: the sends are sealed
       * once the handler is done, still before the bus commits them with the offset. A handler
       * that forwards a message itself (a dead letter) forwards it as it came: sealed.
       */
      const withOpened = async (messages: readonly ConsumedMessage[], ctx: ProcessContext, run: (views: ConsumedMessage[], ctx: ProcessContext) => Promise<void>) => {
        const views = await Promise.all(messages.map(openMessage));
        const originals = new Map<unknown, unknown>();
        views.forEach((view, i) => {
          const message = messages[i];
          if (message !== undefined && view !== message) originals.set(view.value, message.value);
        });
        const queued: OutgoingMessage[] = [];
        await run(views, {
          send: (sent) => void queued.push(...sent),
          sendWithPositions: (build) =>
            ctx.sendWithPositions((sent) => {
              const built = build(sent);
              // Built inside the commit, where nothing can be sealed any more (sealing is async).
              if (built.some((m) => m.topic === TOPICS.commands || m.topic === TOPICS.events)) {
                throw new Error('sendWithPositions cannot build messages for sealed topics');
              }
              return built;
            }),
          onCommitted: (fn) => ctx.onCommitted(fn),
          onDiscarded: (fn) => ctx.onDiscarded(fn),
        });
        const restored = queued.map((m) => (originals.has(m.value) ? { ...m, value: originals.get(m.value) } : m));
        if (restored.length > 0) ctx.send(await sealAll(restored));
      };
      if (batchHandler !== undefined) {
        return inner.subscribe({ ...common, batchHandler: (messages, ctx) => withOpened(messages, ctx, (views, c) => batchHandler(views, c)) });
      }
      return inner.subscribe({
        ...common,
        handler: (message, ctx) => withOpened([message], ctx, ([view], c) => (view === undefined ? Promise.resolve() : handler(view, c))),
      });
    },
    waitForCommitted: (groupId, position, timeoutMs) => inner.waitForCommitted(groupId, position, timeoutMs),
    readAll: (topic) => opened(inner.readAll(topic)),
    // The key filter runs below the opening: messages of other keys are never opened.
    readPartition: (topic, partition, fromOffset, options) => opened(inner.readPartition(topic, partition, fromOffset, options)),
    endOffsets: (topic) => inner.endOffsets(topic),
    committedOffsets: (groupId, topic) => inner.committedOffsets(groupId, topic),
    resetGroup: (groupId) => inner.resetGroup(groupId),
    setCommittedOffsets: (groupId, topic, offsets) => inner.setCommittedOffsets(groupId, topic, offsets),
    partitionFor: (topic, key) => inner.partitionFor(topic, key),
    close: () => inner.close(),
  };
}
