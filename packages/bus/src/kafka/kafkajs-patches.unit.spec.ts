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
 */
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { createServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
type SendMessages = (args: { acks: number; timeout: number; topicMessages: Array<{ topic: string; messages: Array<{ partition: number; value: string }> }> })
  => Promise<Array<{ topicName: string; partition: number; baseOffset: string }>>;
const createSendMessages = require('kafkajs/src/producer/sendMessages.js') as (deps: object) => SendMessages;
const createRetry = require('kafkajs/src/retry') as (options: object) => (fn: (...args: unknown[]) => Promise<unknown>) => Promise<unknown>;
const createAdmin = require('kafkajs/src/admin') as (deps: object) => { fetchTopicOffsets(topic: string): Promise<Array<{ partition: number; offset: string }>> };
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
});
