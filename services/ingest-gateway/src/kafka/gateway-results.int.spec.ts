/**
 * The ingest-gateway's answers on the real broker, with two gateway instances sharing Redis and
 * write-admission behind them (policy in an embedded store): each tenant's results go to a topic
 * of its own and name the tenant and principal the gateway verified (design §4.1), and the HTTP
 * edge's per-principal rate limit holds across both instances (docs/ingest.md#rate-limit).
 * Results used to be keyed only by the producer's requestId on one topic every tenant read: a
 * writer with a capability of its own put a result under another's requestId first, and anyone
 * reading it saw every tenant's ids.
 */
import { randomUUID } from 'node:crypto';
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openState } from '@gm/adapters';
import { createKafkaBus, memoryTopicSpecs, type Bus } from '@gm/bus';
import { DistributedEnv, WithRedis } from '@gm/config';
import { IngestResult, TOPICS, ingestResultsTopic, type PolicyChange, type ServiceHandle } from '@gm/contracts';
import { DEFAULT_TTL_POLICY } from '@gm/domain';
import { createLogger, createMetrics } from '@gm/observability';
import { CapabilityIssuer, generateSigningKeyPair, loadPolicySet } from '@gm/policy';
import { WRITE_ADMISSION_GROUP, startWriteAdmission } from '@gm/write-admission';
import { edgeAuthority } from '@gm/write-edge';
import { openEmbeddedFixture, type EmbeddedFixture } from '@gm/testing/embedded-fixture';
import { legacyProducers } from '../producer-auth.fixture.ts';
import { engineEndpoint } from '@gm/testing/engines';
import { INGEST_GATEWAY_GROUP, startIngestGateway } from '../gateway.ts';
import { deleteKafkaNamespace, specProducer } from './spec-kafka.ts';

const ISSUER = 'gm-spec';
const brokers = (): string[] => engineEndpoint('kafka').split(',');
const maple = { kind: 'project', id: 'maple' } as const;
const PARTITIONS = 2;
/** Requests per minute per principal, for both gateway instances together. */
const LIMIT = 3;

const WRITERS = {
  ana: { tenant: 'acme', principal: 'person-ana' },
  bob: { tenant: 'acme', principal: 'person-bob' },
  eve: { tenant: 'globex', principal: 'person-eve' },
  rae: { tenant: 'acme', principal: 'person-rae' },
} as const;
type Writer = keyof typeof WRITERS;

describe('ingest-gateway on Kafka: results per tenant and principal, and the rate limit', () => {
  const namespace = `gm-spec-${randomUUID().slice(0, 8)}`;
  const topicPrefix = `${namespace}.`;
  let fx: EmbeddedFixture;
  let buses: Bus[] = [];
  let producer: Producer;
  let services: ServiceHandle[] = [];
  let counters: ReturnType<typeof openState>;
  const tokens = new Map<Writer, string>();

  beforeAll(async () => {
    fx = await openEmbeddedFixture({ partitions: PARTITIONS });
    const keys = await generateSigningKeyPair();
    const issuer = await CapabilityIssuer.create(keys.privateJwk, ISSUER);
    let change = 0;
    for (const [name, { tenant, principal }] of Object.entries(WRITERS) as Array<[Writer, (typeof WRITERS)[Writer]]>) {
      change += 1;
      await fx.state.policies.apply({
        type: 'GrantAdded',
        data: { grant: { grantId: `g-${name}`, tenant, principal: { id: principal, kind: 'person' }, resource: maple, role: 'member', purposes: ['support'], restricted: [] } },
        metadata: { changeId: `change-${change}`, tenant, requestedBy: { agentId: 'admin', principalId: 'person-admin' }, occurredAt: fx.clock.iso() },
      } as PolicyChange);
      const { token } = await issuer.issue({
        tenant, agentId: 'scribe', principal: { id: principal, kind: 'person' }, scopes: [maple], purpose: 'support', actions: ['write'],
      }, fx.clock.now(), await fx.state.policyRevisions.current(tenant));
      tokens.set(name, token);
    }
    // The counters in Redis, under this spec's namespace: what every gateway instance of a deployment shares.
    counters = openState(DistributedEnv.extend(WithRedis.shape).parse({ KAFKA_BROKERS: brokers().join(','), REDIS_URL: engineEndpoint('redis'), MEMORY_NAMESPACE: namespace }));
    const log = createLogger({ name: 'spec', level: 'silent' });
    const metrics = createMetrics();
    const { pdp, verifier } = await edgeAuthority({ state: fx.state, clock: fx.clock, policySet: loadPolicySet(), publicJwk: keys.publicJwk, issuerName: ISSUER });
    // Two gateway instances, each with its own connection, and write-admission.
    buses = ['a', 'b', 'admission'].map((name) => createKafkaBus({ brokers: brokers(), clientId: `gm-ingest-results-${name}`, topicPrefix, logger: { warn: () => undefined } }));
    const [first, second, admission] = buses;
    if (first === undefined || second === undefined || admission === undefined) throw new Error('three buses');
    await first.ensureTopics(memoryTopicSpecs(PARTITIONS));
    const rateLimit = { perMinute: LIMIT, counters: counters.rateCounters };
    services = [
      await startWriteAdmission({
        bus: admission, log, metrics, decide: { ttl: DEFAULT_TTL_POLICY, idempotencyWindowMs: 3_600_000 },
        snapshots: { store: fx.state.admission, intervalMs: 60_000, maxEntries: 1_000 },
      }),
      ...(await Promise.all([first, second].map((bus) => startIngestGateway({ bus, verifier, pdp, state: fx.state, clock: fx.clock, log, metrics, rateLimit, producers: legacyProducers(fx, `${topicPrefix}${TOPICS.ingest}`) })))),
    ];
    producer = await specProducer(brokers(), 'gm-ingest-results-producer');
  }, 120_000);

  afterAll(async () => {
    await producer?.disconnect();
    for (const s of services) await s.close();
    for (const bus of buses) await bus.close();
    if (counters !== undefined) {
      await counters.kv.del(await counters.kv.keys(counters.keys.prefix));
      await counters.kv.close();
    }
    await deleteKafkaNamespace(brokers(), topicPrefix);
    await fx?.close();
  }, 60_000);

  /** Produces each writer's request (keyed by subject, so spread over the partitions and both instances). */
  async function produce(requests: Array<{ writer: Writer; requestId: string; subjectId: string }>): Promise<void> {
    await producer.send({
      topic: `${topicPrefix}${TOPICS.ingest}`, acks: -1,
      messages: requests.map(({ writer, requestId, subjectId }) => ({
        key: subjectId,
        value: JSON.stringify({
          requestId, subjectId, resource: maple, kind: 'fact', trust: 'trusted', content: `A note of ${writer}`,
          provenance: [{ source: 'tool', eventId: 'spec-1', observedAt: '2026-11-30T07:59:00.000Z' }],
        }),
        headers: { capability: tokens.get(writer) ?? '' },
      })),
    });
  }

  /** Waits until both gateways and write-admission have passed everything produced so far. */
  async function settled(bus: Bus): Promise<void> {
    for (const [partition, end] of (await bus.endOffsets(TOPICS.ingest)).entries()) {
      if (end > 0) expect(await bus.waitForCommitted(INGEST_GATEWAY_GROUP, { topic: TOPICS.ingest, partition, offset: end - 1 }, 30_000)).toBe(true);
    }
    for (const [partition, end] of (await bus.endOffsets(TOPICS.commands)).entries()) {
      if (end > 0) expect(await bus.waitForCommitted(WRITE_ADMISSION_GROUP, { topic: TOPICS.commands, partition, offset: end - 1 }, 30_000)).toBe(true);
    }
  }

  async function resultsOf(bus: Bus, tenant: string): Promise<IngestResult[]> {
    const out: IngestResult[] = [];
    for await (const message of bus.readAll(ingestResultsTopic(tenant))) {
      const result = IngestResult.parse(message.value);
      expect(message.key).toBe(result.requestId);
      out.push(result);
    }
    return out;
  }

  it('answers each tenant on its own topic, each result naming the verified tenant and principal: another writer\'s result under the victim\'s requestId is never the victim\'s', async () => {
    const [bus] = buses;
    if (bus === undefined) throw new Error('no bus');
    const requestId = `victim-${randomUUID()}`;
    // Another principal of the tenant and another tenant's writer use her requestId first, each with a valid capability of their own.
    await produce([{ writer: 'bob', requestId, subjectId: 'cust-1' }, { writer: 'eve', requestId, subjectId: 'cust-1' }]);
    await settled(bus);
    await produce([{ writer: 'ana', requestId, subjectId: 'cust-2' }]);
    await settled(bus);

    const acme = await resultsOf(bus, 'acme');
    const globex = await resultsOf(bus, 'globex');
    // On acme's topic: bob's result, then ana's, each naming its writer; eve's is not there.
    expect(acme.filter((r) => r.requestId === requestId).map((r) => [r.tenant, r.principal, r.outcome])).toEqual([
      ['acme', 'person-bob', 'accepted'], ['acme', 'person-ana', 'accepted'],
    ]);
    expect(globex.map((r) => [r.tenant, r.principal, r.requestId, r.outcome])).toEqual([['globex', 'person-eve', requestId, 'accepted']]);
    // Matching on tenant, principal and requestId finds her own record, not the first result under her requestId.
    const hers = acme.filter((r) => r.tenant === 'acme' && r.principal === 'person-ana' && r.requestId === requestId);
    expect(hers).toHaveLength(1);
    const [own] = hers;
    const [first] = acme.filter((r) => r.requestId === requestId);
    expect(own?.outcome === 'accepted' && first?.outcome === 'accepted' && own.id !== first.id).toBe(true);
    // No reader of one tenant's topic learns the other's ids.
    const globexIds = new Set(globex.flatMap((r) => (r.outcome === 'accepted' ? [r.id, r.commandId] : [])));
    expect(acme.some((r) => r.tenant !== 'acme' || (r.outcome === 'accepted' && (globexIds.has(r.id) || globexIds.has(r.commandId))))).toBe(false);
    expect(globex.every((r) => r.tenant === 'globex')).toBe(true);
  });

  it('holds each verified principal to the HTTP edge\'s limit across both gateway instances: requests over it are answered MEM_RATE_LIMITED (retriable) and not admitted', async () => {
    const [bus] = buses;
    if (bus === undefined) throw new Error('no bus');
    // Subjects spread over both partitions, so both instances see rae's requests.
    const raes = Array.from({ length: LIMIT + 3 }, (_, i) => ({ writer: 'rae' as const, requestId: `rae-${i}-${randomUUID()}`, subjectId: `rae-subject-${i}` }));
    const anas = [{ writer: 'ana' as const, requestId: `ana-${randomUUID()}`, subjectId: 'ana-subject' }];
    await produce([...raes, ...anas]);
    await settled(bus);
    const partitions = new Set(raes.map((r) => bus.partitionFor(TOPICS.ingest, r.subjectId)));
    expect(partitions.size).toBe(PARTITIONS);

    // Admitted: LIMIT of them, whichever instance read them.
    const raeIds = new Set(raes.map((r) => r.requestId));
    const commanded: string[] = [];
    for await (const message of bus.readAll(TOPICS.commands)) {
      const id = (message.value as { metadata?: { ingestRequestId?: string } }).metadata?.ingestRequestId;
      if (id !== undefined && raeIds.has(id)) commanded.push(id);
    }
    expect(commanded).toHaveLength(LIMIT);

    const results = await resultsOf(bus, 'acme');
    const outcomes = raes.map((r) => results.filter((x) => x.requestId === r.requestId));
    expect(outcomes.every((o) => o.length === 1)).toBe(true);
    const flat = outcomes.flat();
    expect(flat.filter((r) => r.outcome === 'accepted')).toHaveLength(LIMIT);
    const limited = flat.filter((r) => r.outcome === 'rejected');
    expect(limited.map((r) => (r.outcome === 'rejected' ? [r.code, r.retriable, r.principal] : []))).toEqual(
      Array.from({ length: 3 }, () => ['MEM_RATE_LIMITED', true, 'person-rae']),
    );
    // The limited ones are exactly those without a command.
    expect(limited.every((r) => !commanded.includes(r.requestId))).toBe(true);
    // Another principal's count is its own.
    expect(results.find((r) => r.requestId === anas[0]?.requestId)).toMatchObject({ outcome: 'accepted', principal: 'person-ana' });
    // A new window (the gateway's clock) counts afresh.
    fx.clock.advance(60_000);
    const later = { writer: 'rae' as const, requestId: `rae-later-${randomUUID()}`, subjectId: 'rae-subject-0' };
    await produce([later]);
    await settled(bus);
    expect((await resultsOf(bus, 'acme')).find((r) => r.requestId === later.requestId)).toMatchObject({ outcome: 'accepted' });
  });
});
