/**
 * Our kafkajs patches for leaders that move (patches/kafkajs@2.2.4.patch, docs/reliability.md
 * "Kafka client"), on a scripted cluster (leaders and one refused request); the real-engine
 * check is the broker kill of `pnpm chaos`.
 * - A retried produce sends every partition that no broker has accepted yet, wherever its leader
 *   is now. Upstream kept one answer per broker, so a partition whose leader moved to a broker
 *   that had already answered for other partitions was silently left out — the transactional
 *   send then failed with "kafka returned no offset for memory.commands[10]".
 * - An offset read that meets a moved leader refreshes the metadata and tries again; upstream
 *   gave up, and kept the stale leader for the metadata's max age (5 min).
 * - A group commit refused with NOT_COORDINATOR asks where the coordinator is now, and the next
 *   commit goes there. Upstream kept the coordinator of the join, and a key-store follower's
 *   commits were refused for over five minutes after a broker's leaderships moved back.
 * - A request that times out closes its connection, on a real socket to a server that accepts
 *   and never answers (a frozen broker keeps its TCP connections open). Upstream kept the
 *   socket, so every later request to that broker queued behind it and timed out in turn.
 * - A range read fetches from the partition's leader with no consumer group (fetchPartition):
 *   a leader that moved refreshes the metadata and the next fetch goes to the new one, and the
 *   read advances past record batches that hold no record it may see (markers, aborted or
 *   compacted records, empty batches), which upstream's decoder dropped without a trace.
 * - What one client of the process learns about a broker that stopped answering, all of them
 *   use (brokerHealth): a broker fresh metadata no longer lists has every connection to it
 *   closed at once and every pool refreshes; one whose request or connect timed out is tried
 *   last, and a broker that cannot be connected to is skipped like one whose request failed.
 *   Upstream, each of the process's clients found a fenced broker out on its own, one timeout
 *   at a time: for about 25 s after the fencing in the fault suite's broker freeze.
 * - A group's or transactional id's coordinator, once found, is asked for again only after a
 *   request of the process met a moved coordinator or a broken connection (or after 10 s).
 *   Upstream sent a FindCoordinator ahead of every transaction step and every offset read.
 * - An admin keeps its metadata for a minute, and any request that meets a moved leader or
 *   coordinator makes every pool of the process refresh first (brokerHealth.moved). Upstream's
 *   admin had no metadata age: a Metadata request ahead of every offset read.
 * - A member whose partitions are all paused waits for a resume (or a seek), not the whole fetch
 *   wait: upstream slept maxWaitTime before it looked again, however soon a partition resumed.
 * - A connection's request queue keeps a timer only while a request waits to be sent. Upstream
 *   re-armed a 1 ms check for as long as the connection was open: most of what an idle service
 *   spent (docs/sizing.md, "At rest").
 */
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { createServer, type Socket } from 'node:net';
import { describe, expect, it, vi } from 'vitest';

const require = createRequire(import.meta.url);
type SendMessages = (args: { acks: number; timeout: number; topicMessages: Array<{ topic: string; messages: Array<{ partition: number; value: string }> }> })
  => Promise<Array<{ topicName: string; partition: number; baseOffset: string }>>;
const createSendMessages = require('kafkajs/src/producer/sendMessages.js') as (deps: object) => SendMessages;
const createRetry = require('kafkajs/src/retry') as (options: object) => (fn: (...args: unknown[]) => Promise<unknown>) => Promise<unknown>;
interface FetchedPartition { messages: Array<{ offset: string; value: Buffer | null }>; nextOffset: string }
const createAdmin = require('kafkajs/src/admin') as (deps: object) => {
  fetchTopicOffsets(topic: string): Promise<Array<{ partition: number; offset: string }>>;
  fetchPartition(options: { topic: string; partition: number; offset: string }): Promise<FetchedPartition>;
};
const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0/index.js') as { RecordBatch: (options: object) => Promise<{ buffer: Buffer }> };
const Record = require('kafkajs/src/protocol/recordBatch/record/v0/index.js') as (options: object) => unknown;
const Encoder = require('kafkajs/src/protocol/encoder.js') as new () => { writeInt32(n: number): { writeBuffer(b: Buffer): { buffer: Buffer } } };
const Decoder = require('kafkajs/src/protocol/decoder.js') as new (buffer: Buffer) => unknown;
const decodeMessages = require('kafkajs/src/protocol/requests/fetch/v4/decodeMessages.js') as (decoder: unknown) => Promise<FetchedPartition['messages'] & { batchesEnd?: string }>;
const { KafkaJSProtocolError } = require('kafkajs/src/errors.js') as { KafkaJSProtocolError: new (e: { message: string; type: string; code: number; retriable: boolean }) => Error };
const OffsetManager = require('kafkajs/src/consumer/offsetManager/index.js') as new (options: object) => {
  commitOffsets(offsets: { topics: Array<{ topic: string; partitions: Array<{ partition: number; offset: string }> }> }): Promise<void>;
};

interface Connection {
  connect(): Promise<boolean>;
  isConnected(): boolean;
  send(protocol: { request: unknown; response: unknown; requestTimeout?: number }): Promise<unknown>;
  disconnect(): Promise<boolean>;
}
const Connection = require('kafkajs/src/network/connection.js') as new (options: object) => Connection;
const socketFactory = (require('kafkajs/src/network/socketFactory.js') as () => unknown)();
interface BrokerHealth {
  reset(): void;
  markSuspect(host: string, port: number): void;
  isSuspect(host: string, port: number): boolean;
  track(host: string, port: number, close: () => void): () => void;
  generation(): number;
}
const brokerHealth = require('kafkajs/src/cluster/brokerHealth.js') as BrokerHealth;
interface FakeBroker { nodeId: number; connectionPool: { host: string; port: number }; isConnected(): boolean; connect(): Promise<void>; disconnect(): Promise<void>; metadata?(): Promise<unknown> }
const BrokerPool = require('kafkajs/src/cluster/brokerPool.js') as new (options: object) => {
  brokers: Record<string, FakeBroker>;
  seedBroker: FakeBroker;
  healthGeneration: number;
  withBroker<T>(callback: (args: { nodeId: string }) => Promise<T>): Promise<T>;
  refreshMetadata(topics: string[]): Promise<void>;
  refreshMetadataIfNecessary(topics: string[]): Promise<void>;
};
type TopicPartitions = Array<{ topic: string; partitions: number[] }>;
const ConsumerGroup = require('kafkajs/src/consumer/consumerGroup.js') as new (options: object) => {
  memberId: string | null;
  coordinator: unknown;
  offsetManager: unknown;
  idleFetches: Set<unknown>;
  subscriptionState: { assign(topicPartitions: TopicPartitions): void };
  heartbeat(options: { interval: number }): Promise<void>;
  fetch(nodeId: number): Promise<unknown[]>;
  pause(topicPartitions: TopicPartitions): void;
  resume(topicPartitions: TopicPartitions): void;
};
const { KafkaJSConnectionError } = require('kafkajs/src/errors.js') as { KafkaJSConnectionError: new (message: string) => Error };
const apiVersions = require('kafkajs/src/protocol/requests/apiVersions/index.js') as { protocol(v: { version: number }): () => { request: unknown; response: unknown } };

interface ProduceCall { broker: number; partitions: number[] }

/**
 * Partitions 0 and 1 led by broker 1, partition 2 by broker 2. Broker 2 refuses its first
 * request as a deposed leader does (NOT_LEADER_OR_FOLLOWER); the metadata refresh that follows
 * names broker 1 as partition 2's leader.
 */
function scriptedCluster() {
  const leaders = new Map([[0, 1], [1, 1], [2, 2]]);
  const calls: ProduceCall[] = [];
  let refused = false;
  const broker = (nodeId: number) => ({
    nodeId,
    async produce({ topicData }: { topicData: Array<{ topicName?: string; topic: string; partitions: Array<{ partition: number; messages: unknown[] }> }> }) {
      const partitions = topicData.flatMap((t) => t.partitions.map((p) => p.partition));
      calls.push({ broker: nodeId, partitions });
      if (nodeId === 2 && !refused) {
        refused = true;
        throw new KafkaJSProtocolError({ message: 'not the leader', type: 'NOT_LEADER_OR_FOLLOWER', code: 6, retriable: true });
      }
      return {
        topics: topicData.map((t) => ({
          topicName: t.topic,
          partitions: t.partitions.map((p) => ({ partition: p.partition, errorCode: 0, baseOffset: String(100 + p.partition) })),
        })),
      };
    },
  });
  const brokers = new Map([[1, broker(1)], [2, broker(2)]]);
  const cluster = {
    targetTopics: new Set<string>(),
    async addMultipleTargetTopics() {},
    async refreshMetadataIfNecessary() {},
    async refreshMetadata() {
      leaders.set(2, 1);
    },
    isConnected: () => true,
    findTopicPartitionMetadata: () => [...leaders].map(([partitionId, leader]) => ({ partitionId, leader })),
    findLeaderForPartitions: (_topic: string, partitions: string[]) => {
      const result: Record<number, number[]> = {};
      for (const id of partitions.map(Number)) (result[leaders.get(id) ?? -1] ??= []).push(id);
      return result;
    },
    findBroker: async ({ nodeId }: { nodeId: string }) => brokers.get(Number(nodeId)),
  };
  return { cluster, calls };
}

const eosManager = {
  isTransactional: () => false,
  getSequence: () => 0,
  updateSequence: () => undefined,
  acquireBrokerLock: async () => undefined,
  releaseBrokerLock: async () => undefined,
  getProducerId: () => -1,
  getProducerEpoch: () => 0,
};
const silent = { debug: () => undefined, error: () => undefined, info: () => undefined, warn: () => undefined };

describe('kafkajs produce retries (patched)', () => {
  it("sends a partition whose leader moved to a broker that had already answered, and returns every partition's offset", async () => {
    const { cluster, calls } = scriptedCluster();
    const send = createSendMessages({
      logger: silent, cluster, eosManager,
      partitioner: ({ message }: { message: { partition: number } }) => message.partition,
      retrier: createRetry({ retries: 3, initialRetryTime: 1, maxRetryTime: 5 }),
    });

    const answer = await send({
      acks: -1, timeout: 1000,
      topicMessages: [{ topic: 'memory.commands', messages: [0, 1, 2].map((partition) => ({ partition, value: `m${partition}` })) }],
    });

    expect(answer.map((a) => [a.partition, a.baseOffset]).sort()).toEqual([[0, '100'], [1, '101'], [2, '102']]);
    // Partitions 0 and 1 were accepted once and never sent again; partition 2 went to its new leader.
    const sent = calls.map((c) => `${c.broker}:${c.partitions.join(',')}`);
    expect(sent.filter((s) => s === '1:0,1')).toHaveLength(1);
    expect(sent.slice(-1)).toEqual(['1:2']);
  });
});

describe('kafkajs offset reads (patched)', () => {
  it('refreshes the metadata and reads again when the leader it asked has moved', async () => {
    let leaderKnown = false;
    let refreshes = 0;
    const cluster = {
      async addTargetTopic() {},
      async refreshMetadataIfNecessary() {},
      async refreshMetadata() {
        refreshes += 1;
        leaderKnown = true;
      },
      findTopicPartitionMetadata: () => [{ partitionId: 0, leader: 1 }],
      async fetchTopicsOffset(topics: Array<{ topic: string; partitions: Array<{ partition: number }> }>) {
        if (!leaderKnown) throw new KafkaJSProtocolError({ message: 'not the leader', type: 'NOT_LEADER_FOR_PARTITION', code: 6, retriable: true });
        return topics.map((t) => ({ topic: t.topic, partitions: t.partitions.map((p) => ({ partition: p.partition, offset: '42' })) }));
      },
    };
    const logger = { namespace: () => silent };
    const admin = createAdmin({ logger, cluster, retry: { retries: 3, initialRetryTime: 1, maxRetryTime: 5 } });

    const offsets = await admin.fetchTopicOffsets('memory.keys');

    expect(offsets.map((o) => [o.partition, o.offset])).toEqual([[0, '42']]);
    expect(refreshes).toBe(1);
  });
});

describe('kafkajs range reads without a consumer group (patched)', () => {
  /** Record batches as a fetch response carries them. */
  const fetched = async (batches: Array<{ firstOffset: number; lastOffsetDelta: number; values: Array<[number, string]> }>) => {
    const encoded = await Promise.all(batches.map(async ({ firstOffset, lastOffsetDelta, values }) => (await RecordBatch({
      firstOffset: String(firstOffset), lastOffsetDelta,
      records: values.map(([offsetDelta, value]) => Record({ offsetDelta, key: Buffer.from('k'), value: Buffer.from(value) })),
    })).buffer));
    const all = Buffer.concat(encoded);
    return decodeMessages(new Decoder(new Encoder().writeInt32(all.length).writeBuffer(all).buffer));
  };

  it('advances past record batches whose last records, or all of them, are gone (compaction), instead of fetching them again', async () => {
    // Offsets 0-2 with offset 2 compacted away; then a batch left empty (offsets 3-4).
    const messages = await fetched([
      { firstOffset: 0, lastOffsetDelta: 2, values: [[0, 'a'], [1, 'b']] },
      { firstOffset: 3, lastOffsetDelta: 1, values: [] },
    ]);
    expect(messages.map((m) => String(m.value))).toEqual(['a', 'b']);
    expect(messages.batchesEnd).toBe('5');
    expect((await fetched([{ firstOffset: 7, lastOffsetDelta: 0, values: [] }])).batchesEnd).toBe('8');
  });

  it('fetches from the leader the metadata names, and from the new one after a refresh when the old one refuses', async () => {
    const messages = await fetched([{ firstOffset: 10, lastOffsetDelta: 1, values: [[0, 'x'], [1, 'y']] }]);
    let leader = 2;
    const asked: number[] = [];
    const broker = (nodeId: number) => ({
      async fetch({ topics }: { topics: Array<{ partitions: Array<{ fetchOffset: string }> }> }) {
        asked.push(nodeId);
        expect(topics[0]?.partitions[0]?.fetchOffset).toBe('11');
        if (nodeId === 2) throw new KafkaJSProtocolError({ message: 'not the leader', type: 'NOT_LEADER_FOR_PARTITION', code: 6, retriable: true });
        return { responses: [{ topicName: 'memory.events', partitions: [{ partition: 0, highWatermark: '13', lastStableOffset: '13', messages }] }] };
      },
    });
    const cluster = {
      async addTargetTopic() {},
      async refreshMetadataIfNecessary() {},
      async refreshMetadata() {
        leader = 1;
      },
      findLeaderForPartitions: () => ({ [leader]: [0] }),
      findBroker: async ({ nodeId }: { nodeId: string }) => broker(Number(nodeId)),
    };
    const admin = createAdmin({ logger: { namespace: () => silent }, cluster, retry: { retries: 0 } });

    await expect(admin.fetchPartition({ topic: 'memory.events', partition: 0, offset: '11' })).rejects.toThrow('not the leader');
    const read = await admin.fetchPartition({ topic: 'memory.events', partition: 0, offset: '11' });

    expect(asked).toEqual([2, 1]);
    // The record below the fetch offset (a batch starts where it starts) is not handed over.
    expect(read.messages.map((m) => [m.offset, String(m.value)])).toEqual([['11', 'y']]);
    expect(read.nextOffset).toBe('12');
  });
});

describe('kafkajs requests to a broker that stopped answering (patched)', () => {
  it('closes the connection when a request times out, fails the requests still on it as a closed connection, and connects afresh', async () => {
    const accepted: Socket[] = [];
    const server = createServer((socket) => { accepted.push(socket); socket.resume(); }); // reads, never answers
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    const logger = { namespace: () => silent };
    const connection = new Connection({ host: '127.0.0.1', port, logger, socketFactory, requestTimeout: 200, connectionTimeout: 1000 });
    try {
      await connection.connect();
      const timedOut = connection.send(apiVersions.protocol({ version: 0 })());
      // The same request with a long timeout of its own: it is still waiting when the first times out.
      const waiting = connection.send({ ...apiVersions.protocol({ version: 0 })(), requestTimeout: 60_000 });

      await expect(timedOut).rejects.toMatchObject({ name: 'KafkaJSRequestTimeoutError' });
      await expect(waiting).rejects.toMatchObject({ name: 'KafkaJSConnectionClosedError' });
      expect(connection.isConnected()).toBe(false);
      // The broker's side of the socket sees it closed: nothing is left queued on it.
      const first = accepted[0]!;
      if (!first.closed) await once(first, 'close');

      const reconnected = once(server, 'connection');
      await connection.connect();
      await reconnected;
      expect(connection.isConnected()).toBe(true);
      expect(accepted).toHaveLength(2);
    } finally {
      await connection.disconnect();
      for (const socket of accepted) socket.destroy();
      server.close();
    }
  });
});

describe('kafkajs group commits after the coordinator moved (patched)', () => {
  it('asks where the coordinator is now when one refuses as no longer coordinating, and commits there next', async () => {
    const commits: string[] = [];
    const coordinator = (name: string, refuses: boolean) => ({
      isConnected: () => true,
      async offsetCommit() {
        commits.push(name);
        if (refuses) throw new KafkaJSProtocolError({ message: 'not the coordinator', type: 'NOT_COORDINATOR_FOR_GROUP', code: 16, retriable: true });
      },
    });
    const cluster = {
      committedOffsets: () => ({}),
      async refreshMetadata() {},
      findGroupCoordinator: async ({ groupId }: { groupId: string }) => {
        expect(groupId).toBe('keys-follower');
        return coordinator('now', false);
      },
    };
    const offsets = new OffsetManager({
      cluster, coordinator: coordinator('at the join', true), memberAssignment: { 'memory.keys': [0] }, autoCommit: false,
      topicConfigurations: {}, instrumentationEmitter: { emit: () => undefined }, groupId: 'keys-follower', generationId: 3, memberId: 'm-1',
    });
    const commit = { topics: [{ topic: 'memory.keys', partitions: [{ partition: 0, offset: '42' }] }] };

    await expect(offsets.commitOffsets(commit)).rejects.toMatchObject({ type: 'NOT_COORDINATOR_FOR_GROUP' });
    await offsets.commitOffsets(commit);

    expect(commits).toEqual(['at the join', 'now']);
  });

  it('asks where the coordinator is now when the connection to the one of the join closed, instead of reconnecting to it', async () => {
    const commits: string[] = [];
    const asked: string[] = [];
    const coordinator = (name: string, connected: boolean) => ({
      isConnected: () => connected,
      async offsetCommit() {
        commits.push(name);
      },
    });
    const cluster = {
      committedOffsets: () => ({}),
      async refreshMetadata() {},
      findGroupCoordinator: async ({ groupId }: { groupId: string }) => {
        asked.push(groupId);
        return coordinator('now', true);
      },
      // Upstream's way: the same broker again (a frozen one: a connection timeout per commit).
      findBroker: async () => coordinator('the frozen one', true),
    };
    // Its request timed out, and the patched connection closed itself.
    const offsets = new OffsetManager({
      cluster, coordinator: coordinator('at the join', false), memberAssignment: { 'memory.keys': [0] }, autoCommit: false,
      topicConfigurations: {}, instrumentationEmitter: { emit: () => undefined }, groupId: 'keys-follower', generationId: 3, memberId: 'm-1',
    });
    await offsets.commitOffsets({ topics: [{ topic: 'memory.keys', partitions: [{ partition: 0, offset: '42' }] }] });
    expect(asked).toEqual(['keys-follower']);
    expect(commits).toEqual(['now']);
  });
});

describe('kafkajs heartbeats after the coordinator stopped answering (patched)', () => {
  it('asks where the coordinator is now when a heartbeat cannot reach it, and heartbeats there next', async () => {
    const beats: string[] = [];
    const coordinator = (name: string, reachable: boolean) => ({
      async heartbeat() {
        beats.push(name);
        if (!reachable) throw new KafkaJSConnectionError('Connection timeout');
      },
    });
    const asked: string[] = [];
    const cluster = {
      findGroupCoordinator: async ({ groupId }: { groupId: string }) => {
        asked.push(groupId);
        return coordinator('now', true);
      },
    };
    const logger = { namespace: () => silent };
    const group = new ConsumerGroup({
      retry: {}, cluster, groupId: 'replies', topics: [], topicConfigurations: {}, logger, instrumentationEmitter: { emit: () => undefined },
      assigners: [], sessionTimeout: 10_000, rebalanceTimeout: 10_000, maxBytesPerPartition: 1, minBytes: 1, maxBytes: 1, maxWaitTimeInMs: 100,
      autoCommit: false, isolationLevel: 1, metadataMaxAge: 300_000,
    });
    group.memberId = 'm-1';
    // The broker of the join, frozen: fenced and replaced as the group's coordinator.
    group.coordinator = coordinator('frozen', false);

    await expect(group.heartbeat({ interval: 0 })).rejects.toMatchObject({ name: 'KafkaJSConnectionError' });
    await group.heartbeat({ interval: 0 });

    expect(asked).toEqual(['replies']);
    expect(beats).toEqual(['frozen', 'now']);
  });
});

describe('kafkajs clients of one process sharing what they learn about a broker (patched)', () => {
  const poolLogger = { ...silent, namespace: () => poolLogger };
  const newPool = () => new BrokerPool({ connectionPoolBuilder: { build: async () => ({}) }, logger: poolLogger, retry: { retries: 0 } });
  /** A broker as the pool holds it; `reachable: false` fails its connect as a frozen broker's full backlog does. */
  const fakeBroker = (nodeId: number, calls: string[], reachable = true): FakeBroker => {
    let connected = false;
    return {
      nodeId,
      connectionPool: { host: '127.0.0.1', port: 40_000 + nodeId },
      isConnected: () => connected,
      async connect() {
        calls.push(`connect ${nodeId}`);
        if (!reachable) throw new KafkaJSConnectionError('Connection timeout');
        connected = true;
      },
      async disconnect() {
        connected = false;
      },
      // What the cluster lists now: broker 3 was fenced.
      async metadata() {
        return { brokers: [1, 2].map((id) => ({ nodeId: id, host: '127.0.0.1', port: 40_000 + id })), topicMetadata: [] };
      },
    };
  };

  it('asks another broker when one cannot be connected to, and tries a suspect broker last', async () => {
    brokerHealth.reset();
    const calls: string[] = [];
    const pool = newPool();
    pool.brokers = { 1: fakeBroker(1, calls), 3: fakeBroker(3, calls, false) };
    for (let i = 0; i < 10; i += 1) expect(await pool.withBroker(async ({ nodeId }) => `asked ${nodeId}`)).toBe('asked 1');
    brokerHealth.markSuspect('127.0.0.1', 40_003);
    calls.length = 0;
    for (let i = 0; i < 10; i += 1) await pool.withBroker(async ({ nodeId }) => nodeId);
    expect(calls).not.toContain('connect 3');
  });

  it('closes every connection of the process to a broker fresh metadata no longer lists, and makes every other pool refresh', async () => {
    brokerHealth.reset();
    const closed: string[] = [];
    // A connection another client of the process holds to broker 3.
    brokerHealth.track('127.0.0.1', 40_003, () => closed.push('connection to 3'));
    const calls: string[] = [];
    const pool = newPool();
    pool.brokers = { 1: fakeBroker(1, calls), 2: fakeBroker(2, calls), 3: fakeBroker(3, calls) };
    await pool.brokers[1]!.connect();
    pool.seedBroker = pool.brokers[1]!;
    const other = newPool();
    let otherRefreshed = 0;
    other.refreshMetadata = async () => { otherRefreshed += 1; };
    other.brokers = { 1: fakeBroker(1, calls) };
    await other.refreshMetadataIfNecessary([]);
    expect(otherRefreshed).toBe(1);
    (other as unknown as { metadataExpireAt: number; metadata: object }).metadataExpireAt = Date.now() + 300_000;
    (other as unknown as { metadata: object }).metadata = { topicMetadata: [] };

    await pool.refreshMetadata([]);
    expect(Object.keys(pool.brokers).sort()).toEqual(['1', '2']);
    expect(closed).toEqual(['connection to 3']);
    expect(brokerHealth.isSuspect('127.0.0.1', 40_003)).toBe(true);
    // The other pool's metadata is fresh by its age, stale by what the process learnt.
    await other.refreshMetadataIfNecessary([]);
    expect(otherRefreshed).toBe(2);
  });
});

interface CoordinatorCache { reset(): void; onRequestError(error: unknown): void }
const coordinatorCache = require('kafkajs/src/cluster/coordinatorCache.js') as CoordinatorCache;
const Cluster = require('kafkajs/src/cluster/index.js') as { prototype: { findGroupCoordinatorMetadata(options: { groupId: string; coordinatorType: number }): Promise<{ coordinator: { nodeId: number } }> } };
const Broker = require('kafkajs/src/broker/index.js') as new (options: object) => {
  endTxn(options: { transactionalId: string; producerId: number; producerEpoch: number; transactionResult: boolean }): Promise<unknown>;
  lookupRequest: unknown;
};
const lookup = require('kafkajs/src/protocol/requests/index.js').lookup as (versions: object) => unknown;

describe('kafkajs coordinators and metadata reused (patched)', () => {
  const TRANSACTION = 1;
  /** A cluster whose only broker answers FindCoordinator with `nodeId`, counting the asks. */
  const askingCluster = () => {
    const asks: string[] = [];
    let nodeId = 1;
    const cluster = {
      retrier: createRetry({ retries: 0 }),
      logger: silent,
      brokerPool: {
        withBroker: async <T>(callback: (args: { nodeId: string; broker: object }) => Promise<T>) => callback({
          nodeId: '1',
          broker: { findGroupCoordinator: async ({ groupId }: { groupId: string }) => (asks.push(groupId), { coordinator: { nodeId }, host: 'localhost', port: 9092 }) },
        }),
      },
    };
    const find = (groupId: string) => Cluster.prototype.findGroupCoordinatorMetadata.call(cluster, { groupId, coordinatorType: TRANSACTION });
    return { find, asks, moveTo: (id: number) => void (nodeId = id) };
  };
  /** A broker whose every request is refused with `error`. */
  const refusingBroker = (error: Error) => {
    const broker = new Broker({ connectionPool: { host: 'localhost', port: 9092, connectionTimeout: 1000, send: async () => { throw error; } }, logger: { namespace: () => silent } });
    broker.lookupRequest = lookup({ 26: { minVersion: 0, maxVersion: 1 } });
    return broker;
  };
  const endTxn = { transactionalId: 'txn-a', producerId: 7, producerEpoch: 0, transactionResult: true };

  it("asks for a transactional id's coordinator once, then again after a request was refused as not coordinating", async () => {
    coordinatorCache.reset();
    const { find, asks, moveTo } = askingCluster();
    expect((await find('txn-a')).coordinator.nodeId).toBe(1);
    expect((await find('txn-a')).coordinator.nodeId).toBe(1);
    await find('txn-b');
    expect(asks).toEqual(['txn-a', 'txn-b']);

    moveTo(2);
    const notCoordinator = new KafkaJSProtocolError({ message: 'not the coordinator', type: 'NOT_COORDINATOR_FOR_GROUP', code: 16, retriable: true });
    await expect(refusingBroker(notCoordinator).endTxn(endTxn)).rejects.toMatchObject({ type: 'NOT_COORDINATOR_FOR_GROUP' });
    expect((await find('txn-a')).coordinator.nodeId).toBe(2);
    expect(asks).toEqual(['txn-a', 'txn-b', 'txn-a']);
  });

  it('asks again after a connection error, and keeps the answer through errors that say nothing of coordinators', async () => {
    coordinatorCache.reset();
    const { find, asks } = askingCluster();
    await find('txn-a');
    const concurrent = new KafkaJSProtocolError({ message: 'markers being written', type: 'CONCURRENT_TRANSACTIONS', code: 51, retriable: true });
    await expect(refusingBroker(concurrent).endTxn(endTxn)).rejects.toMatchObject({ type: 'CONCURRENT_TRANSACTIONS' });
    await find('txn-a');
    expect(asks).toEqual(['txn-a']);
    await expect(refusingBroker(new KafkaJSConnectionError('connection refused')).endTxn(endTxn)).rejects.toThrow('connection refused');
    await find('txn-a');
    expect(asks).toEqual(['txn-a', 'txn-a']);
  });

  it('makes every pool refresh its metadata when a request meets a leader that moved', async () => {
    brokerHealth.reset();
    const before = brokerHealth.generation();
    const notLeader = new KafkaJSProtocolError({ message: 'not the leader', type: 'NOT_LEADER_FOR_PARTITION', code: 6, retriable: true });
    await expect(refusingBroker(notLeader).endTxn(endTxn)).rejects.toMatchObject({ type: 'NOT_LEADER_FOR_PARTITION' });
    expect(brokerHealth.generation()).toBe(before + 1);
  });
});

describe('kafkajs fetches while every partition is paused (patched)', () => {
  it('fetches again as soon as a partition resumes, instead of sleeping the whole fetch wait', async () => {
    const fetches: number[] = [];
    const cluster = {
      refreshMetadataIfNecessary: async () => undefined,
      findTopicPartitionMetadata: () => [{ partitionId: 0, leader: 1 }],
      findBroker: async () => ({
        fetch: async ({ topics }: { topics: TopicPartitions }) => {
          fetches.push(topics.length);
          return { responses: [] };
        },
      }),
    };
    const group = new ConsumerGroup({
      retry: {}, cluster, groupId: 'replies', topics: ['memory.replies'], topicConfigurations: {}, logger: { namespace: () => silent },
      instrumentationEmitter: { emit: () => undefined }, assigners: [], sessionTimeout: 10_000, rebalanceTimeout: 10_000,
      maxBytesPerPartition: 1, minBytes: 1, maxBytes: 1,
      // An hour: were the idle wait this long, the test would time out.
      maxWaitTimeInMs: 3_600_000,
      autoCommit: false, isolationLevel: 1, metadataMaxAge: 300_000,
    });
    const replies = [{ topic: 'memory.replies', partitions: [0] }];
    group.subscriptionState.assign(replies);
    group.offsetManager = { committedOffsets: () => ({ 'memory.replies': { 0: '5' } }), nextOffset: () => '5', resolveOffsets: async () => undefined };
    group.pause(replies);

    // Nothing to ask for: the fetch waits, without a request.
    const idle = group.fetch(1);
    await vi.waitFor(() => expect(group.idleFetches.size).toBe(1));
    group.resume(replies);
    await expect(idle).resolves.toEqual([]);
    expect(fetches).toEqual([]);

    // Resumed: the next fetch asks for the partition.
    await group.fetch(1);
    expect(fetches).toEqual([1]);
  });
});

interface RequestQueue {
  push(request: { entry: ReturnType<typeof entry>; expectResponse: boolean; sendRequest: () => void }): void;
  fulfillRequest(response: { correlationId: number; payload: Buffer; size: number }): void;
  maybeThrottle(ms: number): void;
  destroy(): void;
  throttleCheckTimeoutId: unknown;
}
const RequestQueue = require('kafkajs/src/network/requestQueue/index.js') as new (options: object) => RequestQueue;

/** A request entry as the connection hands it to its queue, answered into nothing. */
const entry = (correlationId: number) => ({ correlationId, apiKey: 18, apiName: 'ApiVersions', apiVersion: 0, resolve: () => undefined, reject: () => undefined });

describe('kafkajs request queues at rest (patched)', () => {
  const queue = (maxInFlightRequests?: number) =>
    new RequestQueue({ maxInFlightRequests, requestTimeout: 5_000, enforceRequestTimeout: false, clientId: 'spec', broker: 'spec:9092', logger: silent });

  it('keeps no timer once every request was answered: upstream re-armed a 1 ms check forever, on every connection', () => {
    const q = queue();
    q.push({ entry: entry(1), expectResponse: true, sendRequest: () => undefined });
    q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
    expect(q.throttleCheckTimeoutId).toBeNull();
    q.destroy();
  });

  it('still sends a request held back by the in-flight limit once the one before it is answered', () => {
    const q = queue(1);
    const sent: number[] = [];
    q.push({ entry: entry(1), expectResponse: true, sendRequest: () => sent.push(1) });
    q.push({ entry: entry(2), expectResponse: true, sendRequest: () => sent.push(2) });
    expect(sent).toEqual([1]);
    q.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
    expect(sent).toEqual([1, 2]);
    q.destroy();
  });

  it('sends a request held back by a broker throttle once the throttle ends', async () => {
    vi.useFakeTimers();
    try {
      const q = queue();
      const sent: number[] = [];
      q.maybeThrottle(200);
      q.push({ entry: entry(1), expectResponse: true, sendRequest: () => sent.push(1) });
      expect(sent).toEqual([]);
      await vi.advanceTimersByTimeAsync(250);
      expect(sent).toEqual([1]);
      q.destroy();
    } finally {
      vi.useRealTimers();
    }
  });
});
