import type { ConsumerLag, Metrics } from '@gm/observability';
import { groupLag } from './lag.ts';
import type { Bus } from './port.ts';

/**
 * The bus, with the consumer lag of every group subscribed through it on /metrics
 * (`gm_consumer_lag{group,topic,partition}`: the log's end minus the group's committed offset,
 * read from the log at each scrape), and the messages its handlers dead-lettered
 * (`gm_dead_letters_total{topic}`) or skipped because not even their dead letter could be written
 * (`gm_dead_letters_dropped_total{topic}`). What SREs watch while they add or remove instances.
 */
export function meteredBus(bus: Bus, metrics: Metrics): Bus {
  const watched = new Map<string, Set<string>>();
  metrics.lagSources.add(async () => {
    const lags: ConsumerLag[] = [];
    for (const [group, topics] of watched) {
      for (const topic of topics) {
        (await groupLag(bus, group, topic)).forEach((lag, partition) => lags.push({ group, topic, partition, lag }));
      }
    }
    return lags;
  });
  const subscribe: Bus['subscribe'] = async (options) => {
    // Every topic it reads starts at 0 dead letters: the alert on their increase then sees the first (docs/deploy.md#alerts).
    for (const topic of options.topics) {
      metrics.deadLetters.inc({ topic }, 0);
      metrics.deadLettersDropped.inc({ topic }, 0);
    }
    const counted = options.onDeadLettered;
    const dropped = options.onDeadLetterDropped;
    const subscription = await bus.subscribe({
      ...options,
      onDeadLettered: (message) => {
        metrics.deadLetters.inc({ topic: message.topic });
        counted?.(message);
      },
      onDeadLetterDropped: (message) => {
        metrics.deadLettersDropped.inc({ topic: message.topic });
        dropped?.(message);
      },
    });
    const topics = watched.get(options.groupId) ?? new Set<string>();
    for (const topic of options.topics) topics.add(topic);
    watched.set(options.groupId, topics);
    return subscription;
  };
  // Every other method stays the adapter's own (bound: adapters may be class instances).
  return new Proxy(bus, {
    get: (target, prop, receiver) => {
      if (prop === 'subscribe') return subscribe;
      const value: unknown = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
