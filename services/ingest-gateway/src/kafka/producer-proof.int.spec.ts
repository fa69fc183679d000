/**
 * Producer proofs on the real broker (docs/ingest.md#producer-proofs): two gateway replicas share
 * their seen proofs in the real Redis, state otherwise in embedded stores. Whoever reads
 * memory.ingest sees every message's capability and proof; with them it can neither put another
 * body under the capability, nor have a copy admitted a second time, nor produce a message signed
 * outside the window; and a bearer (unbound) capability is refused where only bound ones are taken.
 * (That such a capability is refused by the HTTP API: test/distributed/ingest.e2e.spec.ts.)
 */
import { randomUUID } from 'node:crypto';
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafkaBus, ingestResultsTopicSpec, memoryTopicSpecs, type Bus, type ConsumedMessage, type Subscription } from '@gm/bus';
import { INGEST_PROOF_HEADER, IngestResult, TOPICS, ingestResultsTopic, type IssueCapabilityRequest, type PolicyChange, type ProducerPublicKey, type ServiceHandle } from '@gm/contracts';
import { DEFAULT_TTL_POLICY } from '@gm/domain';
import { createLogger, createMetrics } from '@gm/observability';
import { CapabilityIssuer, generateSigningKeyPair, loadPolicySet, signIngestProof, type SigningKeyPair } from '@gm/policy';
import { createRedisKeyValueStore, type KeyValueStore } from '@gm/state-store';
import { startWriteAdmission } from '@gm/write-admission';
import { edgeAuthority } from '@gm/write-edge';
import { openEmbeddedFixture, type EmbeddedFixture } from '@gm/testing/embedded-fixture';
import { engineEndpoint } from '@gm/testing/engines';
import { eventually } from '@gm/testing/eventually';
import { startIngestGateway } from '../gateway.ts';
import { SeenProofs } from '../seen-proofs.ts';
import { deleteKafkaNamespace, specProducer } from './spec-kafka.ts';

const ISSUER = 'gm-spec';
const WINDOW_MS = 60_000;
const brokers = (): string[] => engineEndpoint('kafka').split(',');
const maple = { kind: 'project', id: 'maple' } as const;

describe('ingest-gateway on Kafka: producer proofs', () => {
  const topicPrefix = `gm-spec-${randomUUID().slice(0, 8)}.`;
  const topic = `${topicPrefix}${TOPICS.ingest}`;
  const redisPrefix = `gm-spec-${randomUUID()}:`;
  const results = new Map<string, IngestResult[]>();
  let fx: EmbeddedFixture;
  let bus: Bus;
  let kv: KeyValueStore;
  let producer: Producer;
  let resultsSub: Subscription;
  let services: ServiceHandle[] = [];
  let producerKeys: { privateJwk: SigningKeyPair['privateJwk']; publicJwk: ProducerPublicKey };
  let bound: string;
  let unbound: string;

  beforeAll(async () => {
    fx = await openEmbeddedFixture({ partitions: 2 });
    bus = createKafkaBus({ brokers: brokers(), clientId: 'gm-ingest-proof-spec', topicPrefix, logger: { warn: () => undefined } });
    await bus.ensureTopics(memoryTopicSpecs(2));
    kv = createRedisKeyValueStore({ url: engineEndpoint('redis'), keyPrefix: redisPrefix });
    const keys = await generateSigningKeyPair();
    const issuer = await CapabilityIssuer.create(keys.privateJwk, ISSUER);
    await fx.state.policies.apply({
      type: 'GrantAdded',
      data: { grant: { grantId: 'g-1', tenant: 'acme', principal: { id: 'person-ana', kind: 'person' }, resource: maple, role: 'member', purposes: ['support'], restricted: [] } },
      metadata: { changeId: 'change-1', tenant: 'acme', requestedBy: { agentId: 'admin', principalId: 'person-admin' }, occurredAt: fx.clock.iso() },
    } as PolicyChange);
    const generated = await generateSigningKeyPair();
    producerKeys = { privateJwk: generated.privateJwk, publicJwk: { kty: 'OKP', crv: 'Ed25519', x: String(generated.publicJwk.x) } };
    const request: IssueCapabilityRequest = {
      tenant: 'acme', agentId: 'scribe', principal: { id: 'person-ana', kind: 'person' }, scopes: [maple], purpose: 'support', actions: ['write'],
    };
    const revision = await fx.state.policyRevisions.current('acme');
    ({ token: bound } = await issuer.issue({ ...request, producerKey: producerKeys.publicJwk }, fx.clock.now(), revision));
    ({ token: unbound } = await issuer.issue(request, fx.clock.now(), revision));
    const log = createLogger({ name: 'spec', level: 'silent' });
    const metrics = createMetrics();
    const { pdp, verifier } = await edgeAuthority({ state: fx.state, clock: fx.clock, policySet: loadPolicySet(), publicJwk: keys.publicJwk, issuerName: ISSUER });
    // Two replicas of the gateway, one group: a copy on the other partition may meet the other one.
    const gateway = () => startIngestGateway({
      bus, verifier, pdp, state: fx.state, clock: fx.clock, log, metrics,
      producers: { topic, windowMs: WINDOW_MS, unbound: 'refuse', seen: new SeenProofs(kv, 'gm:', 2 * WINDOW_MS) },
      rateLimit: { perMinute: 1_000, counters: fx.state.rateCounters },
    });
    services = [
      await startWriteAdmission({
        bus, log, metrics, decide: { ttl: DEFAULT_TTL_POLICY, idempotencyWindowMs: 3_600_000 },
        snapshots: { store: fx.state.admission, intervalMs: 60_000, maxEntries: 1_000 },
      }),
      await gateway(),
      await gateway(),
    ];
    // The gateway creates it with acme's first verified request; here before, to be read from the start.
    await bus.ensureTopics([ingestResultsTopicSpec('acme')]);
    resultsSub = await bus.subscribe({
      groupId: `results-${randomUUID()}`, topics: [ingestResultsTopic('acme')], sends: false, transient: true,
      handler: async (message) => {
        const result = IngestResult.parse(message.value);
        results.set(result.requestId, [...(results.get(result.requestId) ?? []), result]);
      },
    });
    producer = await specProducer(brokers(), 'gm-ingest-proof-producer');
  }, 120_000);

  afterAll(async () => {
    await producer?.disconnect();
    await resultsSub?.close();
    for (const s of services) await s.close();
    await bus?.close();
    if (kv !== undefined) {
      const keys = await kv.keys('');
      if (keys.length > 0) await kv.del(keys);
      await kv.close();
    }
    await deleteKafkaNamespace(brokers(), topicPrefix);
    await fx?.close();
  }, 60_000);

  const body = (requestId: string, content = 'Customer 42 prefers email over phone calls') => ({
    requestId, subjectId: 'cust-42', resource: maple, kind: 'fact', trust: 'trusted', content,
    provenance: [{ source: 'tool', eventId: 'spec-1', observedAt: '2026-11-30T07:59:00.000Z' }],
  });
  const nowSeconds = () => Math.floor(fx.clock.now().getTime() / 1000);

  /** A message as the producer makes it: the bound capability and a proof of this body, key and topic. */
  async function signed(value: Record<string, unknown>, iat = nowSeconds()): Promise<{ key: string; value: string; headers: Record<string, string> }> {
    const proof = await signIngestProof(producerKeys, bound, { topic, key: 'cust-42', value }, iat);
    return { key: 'cust-42', value: JSON.stringify(value), headers: { capability: bound, [INGEST_PROOF_HEADER]: proof } };
  }

  /** Produces each message on its partition; answers their offsets. */
  async function produce(...messages: Array<{ key: string; value: string; headers: Record<string, string>; partition: number }>): Promise<number[]> {
    const offsets: number[] = [];
    for (const m of messages) {
      const [sent] = await producer.send({ topic, acks: -1, messages: [m] });
      offsets.push(Number(sent?.baseOffset));
    }
    return offsets;
  }

  /** The dead letters of these partition/offset pairs, by position, once every one of them is there. */
  async function deadLetters(...at: Array<[number, number]>): Promise<Map<string, string | undefined>> {
    return eventually(`${at.length} dead letter(s)`, async () => {
      const found = new Map<string, string | undefined>();
      for await (const m of bus.readAll(`${TOPICS.ingest}.dlq`)) {
        const where = `${m.headers['dlq.partition']}/${m.headers['dlq.offset']}`;
        if (at.some(([p, o]) => `${p}/${o}` === where)) found.set(where, m.headers['dlq.error']?.split(':')[0]);
      }
      return found.size === at.length ? found : undefined;
    }, 30_000, 100);
  }

  /** Every WriteMemory command the gateways sent for these request ids. */
  async function commandsFor(...requestIds: string[]): Promise<ConsumedMessage[]> {
    const found: ConsumedMessage[] = [];
    for await (const m of bus.readAll(TOPICS.commands)) {
      const id = (m.value as { metadata?: { ingestRequestId?: unknown } } | null)?.metadata?.ingestRequestId;
      if (typeof id === 'string' && requestIds.includes(id)) found.push(m);
    }
    return found;
  }

  it('a reader who copies a message\'s headers cannot put another body under them: dead-lettered, no result, no write', async () => {
    const original = await signed(body(`own-${randomUUID()}`));
    const forgedId = `forged-${randomUUID()}`;
    // The copied capability and proof, over the reader's own request.
    const forged = { ...original, value: JSON.stringify(body(forgedId, 'Customer 42 wants all calls forwarded to the attacker')) };
    const [offset] = await produce({ ...forged, partition: 0 });
    expect(await deadLetters([0, offset ?? -1])).toEqual(new Map([[`0/${offset}`, 'CAP_PROOF_INVALID']]));
    expect(results.has(forgedId)).toBe(false);
    expect(await commandsFor(forgedId)).toEqual([]);
  });

  it('a copy of a message, replayed within the window on another partition, is not admitted twice: one result, one command, the other copy dead-lettered', async () => {
    const requestId = `replayed-${randomUUID()}`;
    const message = await signed(body(requestId));
    const [first, second] = await produce({ ...message, partition: 0 }, { ...message, partition: 1 });
    // Which replica sees which copy first is the broker's business: exactly one of them is admitted.
    await eventually('the result', async () => results.get(requestId), 30_000, 50);
    const dead = await eventually('the copy dead-lettered', async () => {
      const found = [];
      for await (const m of bus.readAll(`${TOPICS.ingest}.dlq`)) {
        const where = `${m.headers['dlq.partition']}/${m.headers['dlq.offset']}`;
        if (where === `0/${first}` || where === `1/${second}`) found.push(m.headers['dlq.error']?.split(':')[0]);
      }
      return found.length > 0 ? found : undefined;
    }, 30_000, 100);
    expect(dead).toEqual(['CAP_PROOF_REPLAYED']);
    expect(results.get(requestId)).toEqual([expect.objectContaining({ requestId, outcome: 'accepted', status: 'active' })]);
    expect(await commandsFor(requestId)).toHaveLength(1);
  });

  it('a message signed outside the window is dead-lettered, unanswered and unwritten; one inside it is admitted', async () => {
    const staleId = `stale-${randomUUID()}`;
    const freshId = `fresh-${randomUUID()}`;
    const stale = await signed(body(staleId), nowSeconds() - WINDOW_MS / 1000 - 1);
    const fresh = await signed(body(freshId), nowSeconds() - WINDOW_MS / 1000 + 1);
    const [staleAt] = await produce({ ...stale, partition: 0 }, { ...fresh, partition: 0 });
    await eventually('the fresh one\'s result', async () => results.get(freshId), 30_000, 50);
    expect(results.get(freshId)).toEqual([expect.objectContaining({ outcome: 'accepted' })]);
    // Same partition, earlier offset: handled before the fresh one was answered.
    expect(await deadLetters([0, staleAt ?? -1])).toEqual(new Map([[`0/${staleAt}`, 'CAP_PROOF_STALE']]));
    expect(results.has(staleId)).toBe(false);
    expect(await commandsFor(staleId)).toEqual([]);
  });

  it('a bearer capability in the old form is refused where only bound ones are taken', async () => {
    const requestId = `bearer-${randomUUID()}`;
    const [offset] = await produce({ key: 'cust-42', value: JSON.stringify(body(requestId)), headers: { capability: unbound }, partition: 1 });
    expect(await deadLetters([1, offset ?? -1])).toEqual(new Map([[`1/${offset}`, 'CAP_KEY_REQUIRED']]));
    expect(results.has(requestId)).toBe(false);
    expect(await commandsFor(requestId)).toEqual([]);
  });
});
