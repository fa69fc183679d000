/**
 * The ingest-gateway on real embedded stores, with write-admission behind it: every request on
 * memory.ingest with a verified capability gets exactly one result on its tenant's results topic, under the HTTP write's rules,
 * and only admitted requests reach memory.commands. (On Kafka: test/distributed/ingest.e2e.spec.ts.)
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { IngestResult, MemoryCommand, TOPICS, ingestResultsTopic, type PolicyChange, type ServiceHandle } from '@gm/contracts';
import { DEFAULT_TTL_POLICY } from '@gm/domain';
import { createLogger, createMetrics } from '@gm/observability';
import { CapabilityIssuer, generateSigningKeyPair, loadPolicySet } from '@gm/policy';
import { WRITE_ADMISSION_GROUP, startWriteAdmission } from '@gm/write-admission';
import { edgeAuthority } from '@gm/write-edge';
import { openEmbeddedFixture, type EmbeddedFixture } from '@gm/testing/embedded-fixture';
import { INGEST_GATEWAY_GROUP, startIngestGateway } from './gateway.ts';
import { legacyProducers } from './producer-auth.fixture.ts';

const ISSUER = 'gm-spec';
const policySet = loadPolicySet();
const maple = { kind: 'project', id: 'maple' } as const;
/** Every request of this spec is tenant acme's: its results topic (design §4.1). */
const RESULTS = ingestResultsTopic('acme');

const body = (overrides: Record<string, unknown> = {}) => ({
  subjectId: 'cust-42', resource: maple, kind: 'fact', trust: 'trusted', content: 'Customer 42 prefers email over phone calls',
  provenance: [{ source: 'tool', eventId: 'spec-1', observedAt: '2026-11-30T07:59:00.000Z' }],
  ...overrides,
});

describe('ingest-gateway', () => {
  let fx: EmbeddedFixture;
  let services: ServiceHandle[] = [];
  let issuer: CapabilityIssuer;
  let metrics: ReturnType<typeof createMetrics>;
  let capability: (overrides?: { ttlSeconds?: number; signedBy?: CapabilityIssuer; principal?: string }) => Promise<{ token: string; jti: string; expiresAt: string }>;

  const policy = (change: Omit<PolicyChange, 'metadata'>, n: number) =>
    fx.state.policies.apply({
      ...change,
      metadata: { changeId: `change-${n}`, tenant: 'acme', requestedBy: { agentId: 'admin', principalId: 'person-admin' }, occurredAt: fx.clock.iso() },
    } as PolicyChange);

  beforeEach(async () => {
    fx = await openEmbeddedFixture({ partitions: 2 });
    const keys = await generateSigningKeyPair();
    issuer = await CapabilityIssuer.create(keys.privateJwk, ISSUER);
    capability = async ({ ttlSeconds, signedBy, principal = 'person-ana' } = {}) => (signedBy ?? issuer).issue({
      tenant: 'acme', agentId: 'scribe', principal: { id: principal, kind: 'person' }, scopes: [maple], purpose: 'support', actions: ['write'],
      ...(ttlSeconds === undefined ? {} : { ttlSeconds }),
    }, fx.clock.now(), await fx.state.policyRevisions.current('acme'));
    await policy({
      type: 'GrantAdded',
      data: { grant: { grantId: 'g-1', tenant: 'acme', principal: { id: 'person-ana', kind: 'person' }, resource: maple, role: 'member', purposes: ['support'], restricted: [] } },
    }, 1);
    // Two other principals who may write there, for the replay of another principal's requestId.
    for (const [n, other] of ['person-bob', 'person-cy'].entries()) {
      await policy({
        type: 'GrantAdded',
        data: { grant: { grantId: `g-${other}`, tenant: 'acme', principal: { id: other, kind: 'person' }, resource: maple, role: 'member', purposes: ['support'], restricted: [] } },
      }, 90 + n);
    }
    const log = createLogger({ name: 'spec', level: 'silent' });
    metrics = createMetrics();
    const { pdp, verifier } = await edgeAuthority({ state: fx.state, clock: fx.clock, policySet, publicJwk: keys.publicJwk, issuerName: ISSUER });
    services = [
      await startWriteAdmission({
        bus: fx.bus, log, metrics, decide: { ttl: DEFAULT_TTL_POLICY, idempotencyWindowMs: 3_600_000 },
        snapshots: { store: fx.state.admission, intervalMs: 60_000, maxEntries: 1_000 },
      }),
      await startIngestGateway({ bus: fx.bus, verifier, pdp, state: fx.state, clock: fx.clock, log, metrics, producers: legacyProducers(fx, TOPICS.ingest), rateLimit: { perMinute: 1_000, counters: fx.state.rateCounters } }),
    ];
  });
  afterEach(async () => {
    for (const s of services) await s.close();
    await fx.close();
  });

  /** Produces the messages, waits until the gateway and write-admission passed them, and answers the results by requestId. */
  async function ingest(messages: Array<{ value: unknown; capability?: string }>): Promise<Map<string, IngestResult>> {
    const positions = await fx.bus.produce(messages.map((m, i) => ({
      topic: TOPICS.ingest, key: `k-${i % 3}`, value: m.value, ...(m.capability === undefined ? {} : { headers: { capability: m.capability } }),
    })));
    for (const position of positions) expect(await fx.bus.waitForCommitted(INGEST_GATEWAY_GROUP, position, 10_000)).toBe(true);
    const ends = await fx.bus.endOffsets(TOPICS.commands);
    for (const [partition, end] of ends.entries()) {
      if (end > 0) expect(await fx.bus.waitForCommitted(WRITE_ADMISSION_GROUP, { topic: TOPICS.commands, partition, offset: end - 1 }, 10_000)).toBe(true);
    }
    const results = (await fx.readTopic(RESULTS)).map((m) => ({ key: m.key, result: IngestResult.parse(m.value) }));
    for (const { key, result } of results) expect(key).toBe(result.requestId);
    for (const { result } of results) expect(result.tenant).toBe('acme');
    return new Map(results.map(({ result }) => [result.requestId, result]));
  }

  it('admits a valid request as a WriteMemory command and answers write-admission\'s decision, quarantine included', async () => {
    const { token } = await capability();
    const results = await ingest([
      { value: { requestId: 'req-1', ...body({ id: 'mem-1' }) }, capability: token },
      { value: { requestId: 'req-2', ...body({ id: 'mem-2', trust: 'untrusted' }) }, capability: token },
    ]);
    expect(results.get('req-1')).toMatchObject({ outcome: 'accepted', id: 'mem-1', version: 1, status: 'active' });
    expect(results.get('req-2')).toMatchObject({ outcome: 'accepted', id: 'mem-2', version: 1, status: 'quarantined' });
    const commands = (await fx.readTopic(TOPICS.commands)).map((m) => MemoryCommand.parse(m.value));
    expect(commands.map((c) => c.metadata.ingestRequestId).sort()).toEqual(['req-1', 'req-2']);
    // Who wrote comes from the capability, as on the HTTP edge; nothing was answered on memory.replies.
    expect(commands.every((c) => c.metadata.actor.agentId === 'scribe' && c.metadata.tenantId === 'acme')).toBe(true);
    expect(await fx.readTopic(TOPICS.replies)).toEqual([]);
    expect((await fx.state.records.get('acme', 'mem-1'))).toBeNull(); // write-admission decides; projections are not running here
  });

  it('dead-letters requests of forged, expired, revoked and missing capabilities, answers none of them, and admits nothing for them', async () => {
    const forger = await CapabilityIssuer.create((await generateSigningKeyPair()).privateJwk, ISSUER);
    const forged = await capability({ signedBy: forger });
    const shortLived = await capability({ ttlSeconds: 60 });
    const revoked = await capability();
    const valid = await capability();
    await policy({ type: 'CapabilityRevoked', data: { jti: revoked.jti, expiresAt: revoked.expiresAt } }, 2);
    fx.clock.advance(61_000);
    const results = await ingest([
      { value: { requestId: 'forged', ...body({ id: 'mem-f' }) }, capability: forged.token },
      { value: { requestId: 'expired', ...body({ id: 'mem-e' }) }, capability: shortLived.token },
      { value: { requestId: 'revoked', ...body({ id: 'mem-r' }) }, capability: revoked.token },
      { value: { requestId: 'missing', ...body({ id: 'mem-m' }) } },
      { value: { requestId: 'garbage', ...body({ id: 'mem-g' }) }, capability: 'not.a.jws' },
      { value: { requestId: 'valid', ...body({ id: 'mem-v' }) }, capability: valid.token },
    ]);
    // Without a verified writer there is no result: anyone could have chosen those requestIds.
    expect(Object.fromEntries([...results].map(([id, r]) => [id, r.outcome]))).toEqual({ valid: 'accepted' });
    const dead = await fx.readTopic(`${TOPICS.ingest}.dlq`);
    expect(Object.fromEntries(dead.map((m) => [(m.value as { requestId: string }).requestId, m.headers['dlq.error']?.split(':')[0]]))).toEqual({
      forged: 'CAP_INVALID', expired: 'CAP_EXPIRED', revoked: 'CAP_REVOKED', missing: 'CAP_MISSING', garbage: 'CAP_INVALID',
    });
    expect(dead).toHaveLength(5);
    for (const message of dead) expect(message.headers).not.toHaveProperty('capability');
    const commands = (await fx.readTopic(TOPICS.commands)).map((m) => MemoryCommand.parse(m.value));
    expect(commands.map((c) => c.metadata.ingestRequestId)).toEqual(['valid']);
    // /metrics counts the gateway's decisions by code.
    const exposition = await metrics.registry.getSingleMetricAsString('gm_ingest_requests_total');
    expect(exposition).toMatch(/gm_ingest_requests_total\{outcome="rejected",code="CAP_INVALID"\} 2/);
    expect(exposition).toMatch(/gm_ingest_requests_total\{outcome="rejected",code="CAP_REVOKED"\} 1/);
    expect(exposition).toMatch(/gm_ingest_requests_total\{outcome="admitted",code=""\} 1/);
  });

  it('answers every edge rule and every write-admission rule with the HTTP write\'s code', async () => {
    const { token } = await capability();
    await ingest([{ value: { requestId: 'first', ...body({ id: 'mem-taken', subjectId: 'cust-1' }) }, capability: token }]);
    const results = await ingest([
      { value: { requestId: 'impersonation', ...body({ tenantId: 'globex' }) }, capability: token },
      { value: { requestId: 'scope', ...body({ resource: { kind: 'project', id: 'other' } }) }, capability: token },
      { value: { requestId: 'invalid', ...body({ content: undefined }) }, capability: token },
      { value: { requestId: 'unknown-field', ...body({ colour: 'red' }) }, capability: token },
      { value: { requestId: 'taken', ...body({ id: 'mem-taken', subjectId: 'cust-2' }) }, capability: token },
      { value: { requestId: 'conflict', ...body({ id: 'mem-taken', subjectId: 'cust-1', expectedVersion: 7 }) }, capability: token },
      { value: { requestId: 'over-ttl', ...body({ expiresAt: '2099-01-01T00:00:00.000Z' }) }, capability: token },
    ]);
    const codes = Object.fromEntries([...results].map(([id, r]) => [id, r.outcome === 'rejected' ? r.code : r.outcome]));
    expect(codes).toEqual({
      first: 'accepted', impersonation: 'MEM_IMPERSONATION', scope: 'CAP_SCOPE_DENIED', invalid: 'MEM_VALIDATION', 'unknown-field': 'MEM_VALIDATION',
      taken: 'MEM_ID_TAKEN', conflict: 'MEM_CONFLICT', 'over-ttl': 'MEM_TTL_EXCEEDED',
    });
    // The gateway's rejections name no command; write-admission's name the one it decided.
    expect(results.get('scope')).not.toHaveProperty('commandId');
    expect(results.get('conflict')).toHaveProperty('commandId');
  });

  it('answers a request produced twice with the first one\'s result, and writes one record', async () => {
    const { token } = await capability();
    const first = await ingest([{ value: { requestId: 'twice', ...body() }, capability: token }]);
    const accepted = first.get('twice');
    expect(accepted).toMatchObject({ outcome: 'accepted', version: 1 });
    await ingest([{ value: { requestId: 'twice', ...body() }, capability: token }]);
    const results = (await fx.readTopic(RESULTS)).map((m) => IngestResult.parse(m.value)).filter((r) => r.requestId === 'twice');
    expect(results).toHaveLength(2);
    expect(results[1]).toMatchObject({ outcome: 'accepted', id: accepted?.outcome === 'accepted' ? accepted.id : '', version: 1 });
    const written = (await fx.readTopic(TOPICS.events)).filter((m) => (m.value as { type?: string }).type === 'MemoryWritten');
    expect(written).toHaveLength(1);
  });

  it('keeps a requestId to its principal: the same agent id under another principal\'s capability gets a write of its own, never the first result', async () => {
    const ana = await capability();
    const first = (await ingest([{ value: { requestId: 'ana-req', ...body({ visibility: 'private' }) }, capability: ana.token }])).get('ana-req');
    expect(first).toMatchObject({ outcome: 'accepted', version: 1 });
    // Her request replayed under another principal's capability with her agent id, and her
    // requestId with other content under a third's: a write of each one's own, no mismatch.
    const bob = await capability({ principal: 'person-bob' });
    const cy = await capability({ principal: 'person-cy' });
    await ingest([{ value: { requestId: 'ana-req', ...body({ visibility: 'private' }) }, capability: bob.token }]);
    await ingest([{ value: { requestId: 'ana-req', ...body({ visibility: 'private', content: 'a guess' }) }, capability: cy.token }]);
    const results = (await fx.readTopic(RESULTS)).map((m) => IngestResult.parse(m.value)).filter((r) => r.requestId === 'ana-req');
    expect(results.map((r) => r.outcome)).toEqual(['accepted', 'accepted', 'accepted']);
    const ids = results.map((r) => (r.outcome === 'accepted' ? r.id : ''));
    expect(new Set(ids).size).toBe(3);
    const written = (await fx.readTopic(TOPICS.events)).map((m) => m.value as { type?: string; data?: { record?: { id: string; owner: { principalId: string } } } })
      .filter((e) => e.type === 'MemoryWritten').map((e) => [e.data?.record?.id, e.data?.record?.owner.principalId]);
    expect(written).toEqual([[ids[0], 'person-ana'], [ids[1], 'person-bob'], [ids[2], 'person-cy']]);
    // Her own retry still gets her first result.
    await ingest([{ value: { requestId: 'ana-req', ...body({ visibility: 'private' }) }, capability: ana.token }]);
    const retried = (await fx.readTopic(RESULTS)).map((m) => IngestResult.parse(m.value)).filter((r) => r.requestId === 'ana-req').at(-1);
    expect(retried).toMatchObject({ outcome: 'accepted', id: ids[0], version: 1 });
  });

  it('dead-letters what it cannot answer with where it came from, and answers the rest of the batch', async () => {
    const { token } = await capability();
    const results = await ingest([
      { value: 'not json at all', capability: token },
      { value: { ...body(), requestId: 'bad id with spaces' }, capability: token },
      { value: body(), capability: token },
      { value: { requestId: 'fine', ...body() }, capability: token },
    ]);
    expect([...results.keys()]).toEqual(['fine']);
    const dead = await fx.readTopic(`${TOPICS.ingest}.dlq`);
    expect(dead).toHaveLength(3);
    for (const message of dead) {
      expect(message.headers).toMatchObject({ 'dlq.topic': TOPICS.ingest, 'dlq.group': INGEST_GATEWAY_GROUP });
      expect(Number(message.headers['dlq.offset'])).toBeGreaterThanOrEqual(0);
      // The capability is a credential: it never travels on with a dead letter.
      expect(message.headers).not.toHaveProperty('capability');
    }
    expect(dead.map((m) => m.value)).toContainEqual('not json at all');
    expect(await metrics.registry.getSingleMetricAsString('gm_dead_letters_total')).toMatch(/gm_dead_letters_total\{topic="memory\.ingest"\} 3/);
  });
});
