/**
 * Consumer groups' commits told across processes over Redis pub/sub (design §9): the shape of
 * the bus's CommitNotices, kept here with the Redis code (the bus depends on no store). One
 * channel per group, so a process hears only the groups it waits on. Pub/sub delivers at most
 * once and only to whoever listens at that moment: the bus treats a notice as a hint and keeps
 * a slow poll of the offsets beside it.
 */
import { Redis, type RedisOptions } from 'ioredis';
import type { RedisTarget } from './redis-key-value.ts';

export interface CommitNotice {
  group: string;
  topic: string;
  partition: number;
  next: number;
}

export interface RedisCommitNotices {
  announce(notice: CommitNotice): void;
  listen(group: string, onNotice: (notice: CommitNotice) => void): Promise<() => void>;
  close(): Promise<void>;
}

export type RedisCommitNoticesOptions = RedisTarget & {
  /** Channels are `<channelPrefix>commits:<group>`: a deployment's namespace keeps its notices apart. */
  channelPrefix: string;
};

const common: RedisOptions = {
  lazyConnect: false,
  connectTimeout: 3_000,
  retryStrategy: (attempt) => Math.min(attempt * 100, 1_000),
};

/** A notice never waits for a Redis that is away: it is dropped, and the listeners' poll answers. */
const PUBLISHING: RedisOptions = {
  ...common,
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  // Commits of one turn (a batch's partitions) go out in one write.
  enableAutoPipelining: true,
};

/** A subscription waits for Redis however long it is away; ioredis subscribes again after each reconnect. */
const LISTENING: RedisOptions = { ...common, enableOfflineQueue: true, maxRetriesPerRequest: null };

function connect(target: RedisTarget, settings: RedisOptions): Redis {
  const redis = 'url' in target
    ? new Redis(target.url, settings)
    : new Redis({ ...settings, sentinels: target.sentinels.map(({ host, port }) => ({ host, port })), name: target.name, failoverDetector: true });
  // Failures reach nobody by design (notices are hints); without a listener ioredis prints them.
  redis.on('error', () => undefined);
  return redis;
}

/** `[topic, partition, next]`: the channel names the group. */
function parse(group: string, text: string): CommitNotice | undefined {
  try {
    const value: unknown = JSON.parse(text);
    if (!Array.isArray(value) || value.length !== 3) return undefined;
    const [topic, partition, next] = value as unknown[];
    if (typeof topic !== 'string' || !Number.isSafeInteger(partition) || !Number.isSafeInteger(next)) return undefined;
    return { group, topic, partition: partition as number, next: next as number };
  } catch {
    return undefined;
  }
}

export function createRedisCommitNotices(options: RedisCommitNoticesOptions): RedisCommitNotices {
  const channelOf = (group: string): string => `${options.channelPrefix}commits:${group}`;
  const publisher = connect(options, PUBLISHING);
  let subscriber: Redis | undefined;
  const listeners = new Map<string, Set<(notice: CommitNotice) => void>>();
  let closed = false;

  const subscribed = (): Redis => {
    if (subscriber !== undefined) return subscriber;
    const redis = connect(options, LISTENING);
    redis.on('message', (channel: string, text: string) => {
      for (const [group, each] of listeners) {
        if (channelOf(group) !== channel) continue;
        const notice = parse(group, text);
        if (notice !== undefined) for (const listener of each) listener(notice);
      }
    });
    subscriber = redis;
    return redis;
  };

  return {
    announce(notice) {
      if (closed) return;
      publisher.publish(channelOf(notice.group), JSON.stringify([notice.topic, notice.partition, notice.next])).catch(() => undefined);
    },
    async listen(group, onNotice) {
      if (closed) throw new Error('commit notices: closed');
      let each = listeners.get(group);
      if (each === undefined) {
        each = new Set();
        listeners.set(group, each);
        await subscribed().subscribe(channelOf(group));
      }
      each.add(onNotice);
      const mine = each;
      return () => {
        mine.delete(onNotice);
      };
    },
    async close() {
      closed = true;
      listeners.clear();
      await Promise.all([publisher, subscriber].map((redis) => redis?.quit().catch(() => redis.disconnect())));
    },
  };
}
