/**
 * The ingest-gateway and write-admission on the real broker (state in embedded stores): a message
 * nobody can answer, whatever its bytes, goes to memory.ingest.dlq — bounded, so the broker takes
 * it — and the valid write another tenant produced after it on the same partition gets its result.
 * 300 KB of control characters were 1.8 MB of JSON as a dead letter: refused by the broker, the
 * send was retried forever and the partition stopped for every tenant.
 */
import { randomUUID } from 'node:crypto';
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafkaBus, ingestResultsTopicSpec, memoryTopicSpecs, type Bus, type Subscription } from '@gm/bus';
import { IngestResult, TOPICS, ingestResultsTopic, type PolicyChange, type ServiceHandle } from '@gm/contracts';
import { DEFAULT_TTL_POLICY } from '@gm/domain';
import { createLogger, createMetrics } from '@gm/observability';
import { CapabilityIssuer, generateSigningKeyPair, loadPolicySet } from '@gm/policy';
import { startWriteAdmission } from '@gm/write-admission';
import { edgeAuthority } from '@gm/write-edge';
import { openEmbeddedFixture, type EmbeddedFixture } from '@gm/testing/embedded-fixture';
import { engineEndpoint } from '@gm/testing/engines';
import { startIngestGateway } from '../gateway.ts';
import { legacyProducers } from '../producer-auth.fixture.ts';
import { deleteKafkaNamespace, specProducer } from './spec-kafka.ts';

const ISSUER = 'gm-spec';
const brokers = (): string[] => engineEndpoint('kafka').split(',');
const maple = { kind: 'project', id: 'maple' } as const;
/** Kafka's default message.max.bytes, which the engines' broker keeps. */
const BROKER_LIMIT = 1_048_588;

/** Values that no request can be read from, each one produced before a valid write on the one partition. */
const POISON: Array<[string, () => Buffer]> = [
  ['300 KB of control characters', () => Buffer.alloc(300_000, 0x01)],
  // As large as the broker takes from a producer: its dead letter, with the dlq.* headers, would not fit.
  ['a message at the broker\'s size limit', () => Buffer.from(JSON.stringify({ padding: 'a'.repeat(1_048_400 - '{"padding":""}'.length) }))],
  ['deeply nested JSON', () => Buffer.from(`{"requestId":"deep-1","a":${'['.repeat(100_000)}${']'.repeat(100_000)}}`)],
  ['invalid UTF-8', () => Buffer.alloc(400_000, 0xff)],
];

describe('ingest-gateway on Kafka: poison messages', () => {
  const topicPrefix = `gm-spec-${randomUUID().slice(0, 8)}.`;
  /** Every result seen, per requestId, in the order of the results topic (one partition). */
  const results = new Map<string, IngestResult[]>();
  const waiting = new Map<string, (result: IngestResult) => void>();
  let fx: EmbeddedFixture;
  let bus: Bus;
  let producer: Producer;
  let resultsSub: Subscription;
  let services: ServiceHandle[] = [];
  let token: string;
  let forged: string;
  const metrics = createMetrics();

  /** The first result of a request, once it arrives. */
  const resultOf = (requestId: string): Promise<IngestResult> => {
    const [seen] = results.get(requestId) ?? [];
    return seen !== undefined ? Promise.resolve(seen) : new Promise((resolve) => waiting.set(requestId, resolve));
  };

  beforeAll(async () => {
    fx = await openEmbeddedFixture({ partitions: 1 });
    bus = createKafkaBus({ brokers: brokers(), clientId: 'gm-ingest-poison-spec', topicPrefix, logger: { warn: () => undefined } });
    await bus.ensureTopics(memoryTopicSpecs(1));
    const keys = await generateSigningKeyPair();
    const issuer = await CapabilityIssuer.create(keys.privateJwk, ISSUER);
    await fx.state.policies.apply({
      type: 'GrantAdded',
      data: { grant: { grantId: 'g-1', tenant: 'acme', principal: { id: 'person-ana', kind: 'person' }, resource: maple, role: 'member', purposes: ['support'], restricted: [] } },
      metadata: { changeId: 'change-1', tenant: 'acme', requestedBy: { agentId: 'admin', principalId: 'person-admin' }, occurredAt: fx.clock.iso() },
    } as PolicyChange);
    ({ token } = await issuer.issue({
      tenant: 'acme', agentId: 'scribe', principal: { id: 'person-ana', kind: 'person' }, scopes: [maple], purpose: 'support', actions: ['write'],
    }, fx.clock.now(), await fx.state.policyRevisions.current('acme')));
    const forger = await CapabilityIssuer.create((await generateSigningKeyPair()).privateJwk, ISSUER);
    ({ token: forged } = await forger.issue({
      tenant: 'acme', agentId: 'scribe', principal: { id: 'person-ana', kind: 'person' }, scopes: [maple], purpose: 'support', actions: ['write'],
    }, fx.clock.now(), await fx.state.policyRevisions.current('acme')));
    const log = createLogger({ name: 'spec', level: 'silent' });
    const { pdp, verifier } = await edgeAuthority({ state: fx.state, clock: fx.clock, policySet: loadPolicySet(), publicJwk: keys.publicJwk, issuerName: ISSUER });
    services = [
      await startWriteAdmission({
        bus, log, metrics, decide: { ttl: DEFAULT_TTL_POLICY, idempotencyWindowMs: 3_600_000 },
        snapshots: { store: fx.state.admission, intervalMs: 60_000, maxEntries: 1_000 },
      }),
      await startIngestGateway({ bus, verifier, pdp, state: fx.state, clock: fx.clock, log, metrics, producers: legacyProducers(fx, `${topicPrefix}${TOPICS.ingest}`), rateLimit: { perMinute: 1_000, counters: fx.state.rateCounters } }),
    ];
    // The gateway creates it with acme's first verified request; here before, to be read from the start.
    await bus.ensureTopics([ingestResultsTopicSpec('acme')]);
    resultsSub = await bus.subscribe({
      groupId: `results-${randomUUID()}`, topics: [ingestResultsTopic('acme')], sends: false, transient: true,
      handler: async (message) => {
        const result = IngestResult.parse(message.value);
        results.set(result.requestId, [...(results.get(result.requestId) ?? []), result]);
        waiting.get(result.requestId)?.(result);
      },
    });
    producer = await specProducer(brokers(), 'gm-ingest-poison-producer');
  }, 120_000);

  afterAll(async () => {
    await producer?.disconnect();
    await resultsSub?.close();
    for (const s of services) await s.close();
    await bus?.close();
    await deleteKafkaNamespace(brokers(), topicPrefix);
    await fx?.close();
  }, 60_000);

  it.each(POISON)('%s goes to the dead-letter topic, bounded, and the next tenant\'s write on the partition gets its result', async (_, poison) => {
    const requestId = `valid-${randomUUID()}`;
    const body = {
      requestId, subjectId: 'cust-42', resource: maple, kind: 'fact', trust: 'trusted', content: 'Customer 42 prefers email over phone calls',
      provenance: [{ source: 'tool', eventId: 'spec-1', observedAt: '2026-11-30T07:59:00.000Z' }],
    };
    // Two sends: one record batch holds the poison alone, however large.
    const topic = `${topicPrefix}${TOPICS.ingest}`;
    const [sent] = await producer.send({ topic, acks: -1, messages: [{ key: 'attacker', value: poison(), partition: 0 }] });
    await producer.send({ topic, acks: -1, messages: [{ key: 'cust-42', value: JSON.stringify(body), headers: { capability: token }, partition: 0 }] });
    const poisonOffset = Number(sent?.baseOffset);

    expect(await resultOf(requestId)).toMatchObject({ requestId, outcome: 'accepted', status: 'active' });
    const dead = [];
    for await (const message of bus.readAll(`${TOPICS.ingest}.dlq`)) if (Number(message.headers['dlq.offset']) === poisonOffset) dead.push(message);
    expect(dead).toHaveLength(1);
    const [letter] = dead;
    expect(letter?.headers).toMatchObject({ 'dlq.topic': TOPICS.ingest, 'dlq.partition': '0' });
    expect(letter?.headers).not.toHaveProperty('capability');
    const bytes = Buffer.byteLength(JSON.stringify(letter?.value)) + Object.entries(letter?.headers ?? {}).reduce((n, [k, v]) => n + k.length + v.length, 0);
    expect(bytes).toBeLessThan(BROKER_LIMIT);
  });

  it('answers nobody\'s request from a message without a valid capability: produced first under the victim\'s requestId, it is dead-lettered', async () => {
    const requestId = `victim-${randomUUID()}`;
    const body = {
      requestId, subjectId: 'cust-7', resource: maple, kind: 'fact', trust: 'trusted', content: 'Customer 7 prefers email',
      provenance: [{ source: 'tool', eventId: 'spec-2', observedAt: '2026-11-30T07:59:00.000Z' }],
    };
    const topic = `${topicPrefix}${TOPICS.ingest}`;
    const [spoof] = await producer.send({
      topic, acks: -1,
      messages: [
        { key: 'attacker', value: JSON.stringify({ ...body, content: 'spoofed' }), partition: 0 },
        { key: 'attacker', value: JSON.stringify({ ...body, content: 'spoofed' }), headers: { capability: forged }, partition: 0 },
      ],
    });
    await producer.send({ topic, acks: -1, messages: [{ key: 'cust-7', value: JSON.stringify(body), headers: { capability: token }, partition: 0 }] });
    // The results topic has one partition: a result of the spoofs would come before the victim's.
    expect(await resultOf(requestId)).toMatchObject({ requestId, outcome: 'accepted' });
    expect(results.get(requestId)).toHaveLength(1);
    const first = Number(spoof?.baseOffset);
    const dead = [];
    for await (const message of bus.readAll(`${TOPICS.ingest}.dlq`)) {
      const offset = Number(message.headers['dlq.offset']);
      if (offset === first || offset === first + 1) dead.push(message.headers['dlq.error']?.split(':')[0]);
    }
    expect(dead).toEqual(['CAP_MISSING', 'CAP_INVALID']);
  });
});
