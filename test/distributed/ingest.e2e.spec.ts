/**
 * Kafka-native ingest on the distributed runtime (docs/ingest.md): a platform produces with kafkajs
 * (examples/ingest/ingest-producer.ts, the shipped example itself) onto memory.ingest, and the
 * ingest-gateway process admits each request under the HTTP write's rules. Every request of a
 * verified writer gets exactly one result on its tenant's results topic, naming the writer, also
 * across a `kill -9` of the gateway.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKafkaBus, memoryTopicSpecs } from '@gm/bus';
import { CONSUMER_GROUPS, TOPICS, ingestResultsTopic } from '@gm/contracts';
import { MODEL_DIMENSIONS, MODEL_ID } from '@gm/embedding';
import { startStack, type Stack } from '@gm/distributed';
import { collectResults, exampleRequest, generateProducerKey, openIngestProducer, type IngestRequest, type IngestResult } from '@gm/examples/ingest-producer';
import { CapabilityIssuer, type SigningKeyPair } from '@gm/policy';
import { engineEndpoint } from '@gm/testing';
import { apiClient, capabilityIssuer, eventually, memory } from '../e2e/harness.ts';

describe('memory.ingest on the distributed runtime', () => {
  let stack: Stack;
  let dataDir: string;
  const namespace = `ingest-${randomUUID().slice(0, 8)}`;
  const connection = () => ({ brokers: engineEndpoint('kafka').split(','), namespace });
  const api = apiClient(() => stack.url);
  /** The producer's key: what its capabilities are bound to (docs/ingest.md#producer-proofs). */
  const key = generateProducerKey();
  /** A capability for the HTTP API (bearer); `bound`: one for producing, bound to the producer's key. */
  const issue = (agentId = 'ingest-bot', ttlSeconds?: number, bound = false) =>
    capabilityIssuer(api, () => readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim())({
      agentId, ...(ttlSeconds ? { ttlSeconds } : {}), ...(bound ? { producerKey: key.publicJwk } : {}),
    });
  const issueBound = (agentId = 'ingest-bot') => issue(agentId, undefined, true);

  /** Produces the requests with `capability`, and answers every result of theirs (all of them, duplicates included). */
  async function ingest(capability: string, requests: IngestRequest[]): Promise<Map<string, IngestResult[]>> {
    const producer = await openIngestProducer({ ...connection(), capability, key });
    await producer.send(requests);
    await producer.close();
    return collectResults({ ...connection(), capability, requestIds: new Set(requests.map((r) => r.requestId)), timeoutMs: 60_000 });
  }
  const request = (requestId: string, overrides: Record<string, unknown> = {}): IngestRequest => ({ requestId, ...memory(overrides) }) as IngestRequest;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-ingest-'));
    stack = await startStack({ dataDir, port: 0, namespace, env: { MEMORY_RATE_LIMIT_PER_MINUTE: '100000', MEMORY_PARTITIONS: '4', MEMORY_INGEST_UNBOUND_CAPABILITIES: 'refuse' } });
  }, 180_000);
  afterAll(async () => {
    await stack?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it('admits a produced write under the HTTP rules: readable through the API, quarantined when untrusted, impersonation refused, its own embedding only of the stack\'s model', async () => {
    const token = await issue();
    const producing = await issueBound();
    // A platform's own vector (a unit vector no text of ours embeds to): found by it, it was indexed as sent.
    const vector = Array.from({ length: MODEL_DIMENSIONS }, (_, i) => (i === 11 ? 1 : 0));
    const results = await ingest(producing, [
      request('ok-1', { id: 'ingested-1', subjectId: 'ing-1' }),
      request('ok-2', { id: 'ingested-2', subjectId: 'ing-1', trust: 'untrusted' }),
      request('imp-1', { tenantId: 'globex', subjectId: 'ing-1' }),
      request('vec-ok', { id: 'ingested-vec', subjectId: 'ing-2', embedding: { model: MODEL_ID, vector } }),
      request('vec-bad', { id: 'ingested-vec-bad', subjectId: 'ing-2', embedding: { model: 'text-embedding-3-small', vector } }),
    ]);
    expect(results.get('ok-1')).toEqual([expect.objectContaining({ outcome: 'accepted', id: 'ingested-1', version: 1, status: 'active' })]);
    expect(results.get('ok-2')).toEqual([expect.objectContaining({ outcome: 'accepted', id: 'ingested-2', status: 'quarantined' })]);
    expect(results.get('imp-1')).toEqual([expect.objectContaining({ outcome: 'rejected', code: 'MEM_IMPERSONATION', retriable: false })]);
    expect(results.get('vec-ok')).toEqual([expect.objectContaining({ outcome: 'accepted', id: 'ingested-vec', status: 'active' })]);
    expect(results.get('vec-bad')).toEqual([expect.objectContaining({ outcome: 'rejected', code: 'MEM_VALIDATION', retriable: false })]);
    const byVector = await eventually('the ingested vector searchable', async () => {
      const res = await api('POST', '/v1/search', { token, body: { query: 'anything', mode: 'semantic', subjectId: 'ing-2', embedding: { model: MODEL_ID, vector } } });
      return res.status === 200 && res.body.items.length > 0 ? res.body.items.map((i: { recordId: string }) => i.recordId) : undefined;
    }, 60_000);
    expect(byVector).toEqual(['ingested-vec']);
    expect((await writtenIds()).has('ingested-vec-bad')).toBe(false);
    // The accepted write is a record like any other: the API reads it back once projected.
    const read = await eventually('the ingested record readable', async () => {
      const res = await api('GET', '/v1/memories/ingested-1', { token });
      return res.status === 200 ? res : undefined;
    }, 30_000);
    expect(read.body).toMatchObject({ id: 'ingested-1', content: 'Customer 42 prefers email over phone calls' });
  });

  it('keeps a result to its writer: another principal and another tenant using her requestId first are answered on their own terms, and the example\'s collector takes her own', async () => {
    const requestId = `victim-${randomUUID()}`;
    const spoofer = await issueBound('ingest-spoofer');
    const stranger = await capabilityIssuer(api, () => readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim())({ tenant: 'globex', agentId: 'globex-bot', producerKey: key.publicJwk });
    // Each with a valid capability of its own, under her requestId, before her.
    const spoofed = await ingest(spoofer, [request(requestId, { id: 'spoofer-rec', subjectId: 'ing-spoof', content: 'spoofed' })]);
    expect(spoofed.get(requestId)).toEqual([expect.objectContaining({ tenant: 'acme', principal: 'ingest-spoofer', outcome: 'accepted', id: 'spoofer-rec' })]);
    const foreign = await ingest(stranger, [request(requestId, { id: 'globex-rec', subjectId: 'ing-spoof', content: 'spoofed' })]);
    expect(foreign.get(requestId)).toEqual([expect.objectContaining({ tenant: 'globex', principal: 'globex-bot', outcome: 'accepted', id: 'globex-rec' })]);
    const own = await ingest(await issueBound(), [request(requestId, { id: 'victim-rec', subjectId: 'ing-spoof' })]);
    expect(own.get(requestId)).toEqual([expect.objectContaining({ tenant: 'acme', principal: 'ingest-bot', outcome: 'accepted', id: 'victim-rec' })]);
    // acme's results topic, all of it: nothing of globex's.
    const reader = createKafkaBus({ brokers: connection().brokers, clientId: 'ingest-spec-results', topicPrefix: `${namespace}.` });
    const acme: Array<{ tenant: string; id?: string }> = [];
    try {
      for await (const m of reader.readAll(ingestResultsTopic('acme'))) acme.push(m.value as { tenant: string; id?: string });
    } finally {
      await reader.close();
    }
    expect(acme.length).toBeGreaterThan(0);
    expect(acme.filter((r) => r.tenant !== 'acme' || r.id === 'globex-rec')).toEqual([]);
  });

  it('dead-letters the requests of forged, expired and revoked capabilities, answering and admitting none of them', async () => {
    const valid = await issueBound();
    const revoked = await issueBound('ingest-revoked');
    const jti = (JSON.parse(Buffer.from(revoked.split('.')[1] ?? '', 'base64url').toString('utf8')) as { jti: string }).jti;
    // Revoked by its principal through the API, with a bearer capability of its own (a bound one is refused there).
    expect((await api('POST', `/v1/capabilities/${jti}/revoke`, { token: await issue('ingest-revoked'), body: {} })).status).toBe(202);
    // Expired: minted with the real signing key an hour ago, for 60 s.
    const signing = JSON.parse(readFileSync(path.join(dataDir, 'keys', 'capability-signing.jwk.json'), 'utf8')) as SigningKeyPair;
    const expired = (await (await CapabilityIssuer.create(signing.privateJwk, 'governed-memory')).issue({
      tenant: 'acme', agentId: 'ingest-bot', scopes: [{ kind: 'project', id: 'maple' }], purpose: 'support', actions: ['write'], ttlSeconds: 60,
      producerKey: key.publicJwk,
    }, new Date(Date.now() - 3_600_000), 0)).token;
    // Forged: the valid capability with its claims changed (the signature no longer matches).
    const [header, payload, signature] = valid.split('.');
    const claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
    const forged = [header, Buffer.from(JSON.stringify({ ...claims, tenant: 'globex' })).toString('base64url'), signature].join('.');

    // Without a verified writer nothing is answered (anyone could have chosen the requestId): the
    // three go to memory.ingest.dlq, produced before the valid request, which is answered.
    for (const [name, capability] of [['forged', forged], ['expired', expired], ['revoked', revoked]] as const) {
      const producer = await openIngestProducer({ ...connection(), capability, key });
      await producer.send([request(`cap-${name}`, { id: `cap-${name}`, subjectId: 'ing-cap' })]);
      await producer.close();
    }
    const outcomes = await ingest(valid, [request('cap-valid', { id: 'cap-valid', subjectId: 'ing-cap' })]);
    expect(outcomes.get('cap-valid')).toEqual([expect.objectContaining({ outcome: 'accepted' })]);
    const reader = createKafkaBus({ brokers: connection().brokers, clientId: 'ingest-spec-dlq', topicPrefix: `${namespace}.` });
    const dead = new Map<string, string | undefined>();
    try {
      for await (const m of reader.readAll(`${TOPICS.ingest}.dlq`)) {
        const requestId = (m.value as { requestId?: unknown } | null)?.requestId;
        if (typeof requestId === 'string' && requestId.startsWith('cap-')) dead.set(requestId, m.headers['dlq.error']?.split(':')[0]);
      }
    } finally {
      await reader.close();
    }
    expect(Object.fromEntries(dead)).toEqual({ 'cap-forged': 'CAP_INVALID', 'cap-expired': 'CAP_EXPIRED', 'cap-revoked': 'CAP_REVOKED' });
    const written = await writtenIds();
    expect(['cap-forged', 'cap-expired', 'cap-revoked'].filter((id) => written.has(id))).toEqual([]);
    expect(written.get('cap-valid')).toBe(1);
  });

  it('a reader of memory.ingest who copies a message\'s headers can use them neither at the HTTP API nor under another body, nor replay the message; a bearer capability is refused on the topic', async () => {
    const outcome = await ingest(await issueBound(), [request('copy-own', { id: 'copy-own', subjectId: 'ing-copy' })]);
    expect(outcome.get('copy-own')).toEqual([expect.objectContaining({ outcome: 'accepted' })]);
    const reader = createKafkaBus({ brokers: connection().brokers, clientId: 'ingest-spec-reader', topicPrefix: `${namespace}.` });
    try {
      await reader.ensureTopics(memoryTopicSpecs(4));
      let copied: { key: string; value: unknown; headers: Record<string, string> } | undefined;
      for await (const m of reader.readAll(TOPICS.ingest)) {
        if ((m.value as { requestId?: unknown } | null)?.requestId === 'copy-own') copied = { key: m.key, value: m.value, headers: m.headers };
      }
      const capability = copied?.headers.capability ?? '';
      expect(capability).not.toBe('');
      // The HTTP API: the copied capability is no bearer token.
      for (const [method, route, body] of [['GET', '/v1/memories/copy-own', undefined], ['POST', '/v1/memories', memory({ subjectId: 'ing-copy' })]] as const) {
        const res = await api(method, route, { token: capability, ...(body === undefined ? {} : { body }) });
        expect([route, res.status, res.body.code]).toEqual([route, 401, 'CAP_KEY_BOUND']);
      }
      // The topic: another body under the copied headers, the very same message again, and a bearer capability.
      const positions = await reader.produce([
        { topic: TOPICS.ingest, key: copied?.key ?? '', value: request('copy-forged', { id: 'copy-forged', subjectId: 'ing-copy' }), headers: copied?.headers ?? {} },
        { topic: TOPICS.ingest, key: copied?.key ?? '', value: copied?.value, headers: copied?.headers ?? {} },
        { topic: TOPICS.ingest, key: 'ing-copy', value: request('copy-bearer', { id: 'copy-bearer', subjectId: 'ing-copy' }), headers: { capability: await issue() } },
      ]);
      const wanted = new Map(positions.map((p, i) => [`${p.partition}/${p.offset}`, ['forged', 'replayed', 'bearer'][i]]));
      const dead = await eventually('the three dead-lettered', async () => {
        const found = new Map<string, string | undefined>();
        for await (const m of reader.readAll(`${TOPICS.ingest}.dlq`)) {
          const name = wanted.get(`${m.headers['dlq.partition']}/${m.headers['dlq.offset']}`);
          if (name !== undefined) found.set(name, m.headers['dlq.error']?.split(':')[0]);
        }
        return found.size === wanted.size ? found : undefined;
      }, 60_000);
      expect(Object.fromEntries(dead)).toEqual({ forged: 'CAP_PROOF_INVALID', replayed: 'CAP_PROOF_REPLAYED', bearer: 'CAP_KEY_REQUIRED' });
    } finally {
      await reader.close();
    }
    const written = await writtenIds();
    expect([written.get('copy-own'), written.has('copy-forged'), written.has('copy-bearer')]).toEqual([1, false, false]);
    expect((await ingestCommandCounts()).get(JSON.stringify(['acme', 'ingest-bot', 'copy-own']))).toBe(1);
  });

  it('kill -9 of the ingest-gateway mid-stream: every request is answered exactly once, admitted once, and has one record', async () => {
    const capability = await issueBound();
    const producer = await openIngestProducer({ ...connection(), capability, key });
    const requests = Array.from({ length: 1_500 }, (_, i) => ({ ...exampleRequest(i), requestId: `kill-${i}`, id: `kill-rec-${i}` }));
    const wanted = new Set(requests.map((r) => r.requestId));
    let firstResult!: () => void;
    const flowing = new Promise<void>((resolve) => (firstResult = resolve));
    const collected = collectResults({ ...connection(), capability, requestIds: wanted, timeoutMs: 150_000, onProgress: () => firstResult() });
    const send = async (from: number, to: number) => {
      for (let i = from; i < to; i += 50) await producer.send(requests.slice(i, Math.min(i + 50, to)));
    };
    // Half the stream, then the gateway is killed as soon as it answers; the other half is produced
    // while it is down and restarting, so the kill lands inside the stream, whatever it was doing.
    await send(0, 750);
    await flowing;
    await stack.kill('ingest-gateway', 'SIGKILL');
    const restarted = stack.start('ingest-gateway');
    await send(750, requests.length);
    await producer.close();
    await restarted;
    const results = await collected;
    // Exactly one answer per request: accepted, with its record at version 1. (The killed
    // gateway's open transactions are aborted by the restarted one's fencing; a read_committed
    // reader must never see their commands — patches/kafkajs@2.2.4.patch.)
    expect([...wanted].filter((id) => results.get(id)?.length !== 1)).toEqual([]);
    for (const [requestId, [answer]] of results) {
      expect(answer?.outcome === 'accepted' ? `${answer.id} v${answer.version} ${answer.status}` : answer?.code, requestId)
        .toBe(`kill-rec-${requestId.slice('kill-'.length)} v1 active`);
    }
    // One command per request on the raw log, and one record: nothing was admitted twice.
    expect([...(await ingestCommandCounts())].filter(([, n]) => n !== 1)).toEqual([]);
    const written = await writtenIds();
    expect(requests.filter((r) => written.get(r.id as string) !== 1).map((r) => r.id)).toEqual([]);
  }, 240_000);

  it('scales out and in mid-stream: every request answered alike, every write present exactly once, per-subject order kept', async () => {
    const capability = await issueBound();
    const producer = await openIngestProducer({ ...connection(), capability, key });
    const SUBJECTS = 20;
    const TOTAL = 4_000;
    // Subject s gets records scale-s<s>-0, -1, … in this order; its messages share a key, so one partition.
    const requests = Array.from({ length: TOTAL }, (_, i) => {
      const subject = i % SUBJECTS;
      const n = Math.floor(i / SUBJECTS);
      return request(`scale-req-${i}`, { id: `scale-s${subject}-${n}`, subjectId: `scale-subject-${subject}`, content: `Scale note ${n} of subject ${subject}` });
    });
    // The producer keeps at most `window` requests unanswered, so the stream lasts as long as the
    // pipeline takes; while instances come and go it trickles (20 unanswered) so that requests keep
    // flowing through the rebalances, and the last quarter waits for the scale-in to be done.
    let window = 150;
    let answered = 0;
    const waiters: Array<() => void> = [];
    const answeredAtLeast = (n: number) => new Promise<void>((resolve) => {
      if (answered >= n) resolve();
      else waiters.push(() => { if (answered >= n) resolve(); else void answeredAtLeast(n).then(resolve); });
    });
    const collected = collectResults({
      ...connection(), capability, requestIds: new Set(requests.map((r) => r.requestId)), timeoutMs: 240_000,
      onProgress: (seen) => { answered = seen; for (const wake of waiters.splice(0)) wake(); },
    });
    let scaledInDone!: () => void;
    const scaleInDone = new Promise<void>((resolve) => (scaledInDone = resolve));
    const streaming = (async () => {
      for (let i = 0; i < TOTAL; i += 20) {
        if (i === (TOTAL * 3) / 4) await scaleInDone;
        await answeredAtLeast(i - window);
        await producer.send(requests.slice(i, i + 20));
      }
    })();
    const PIPELINE = ['write-admission', 'projector', 'index-builder', 'ingest-gateway'] as const;
    await answeredAtLeast(300);
    window = 20;
    await Promise.all(PIPELINE.map((service) => stack.start(service)));
    const scaledOut = answered;
    window = 150;
    // (Never past the gate below, which only the scale-in opens.)
    await answeredAtLeast(Math.min(scaledOut + 300, (TOTAL * 3) / 4));
    window = 20;
    // The first instances leave (SIGTERM: they finish and commit what they hold, then the group rebalances).
    await Promise.all(PIPELINE.map((service) => stack.killOne(service, 'SIGTERM')));
    const scaledIn = answered;
    window = 150;
    scaledInDone();
    await streaming;
    await producer.close();
    const results = await collected;
    // Both changes happened while requests were still flowing.
    expect(scaledOut).toBeLessThan(scaledIn);
    expect(scaledIn).toBeLessThan(TOTAL);
    // Every request answered exactly once, with the acceptance of its record at version 1.
    expect(requests.filter((r) => results.get(r.requestId)?.length !== 1).map((r) => r.requestId)).toEqual([]);
    for (const r of requests) {
      const [answer] = results.get(r.requestId) ?? [];
      expect(answer?.outcome === 'accepted' ? `${answer.id} v${answer.version} ${answer.status}` : answer?.code, r.requestId).toBe(`${String(r.id)} v1 active`);
    }

    const written = await writtenIds();
    expect(requests.filter((r) => written.get(r.id as string) !== 1).map((r) => r.id)).toEqual([]);
    // Per subject, the events are in the order the records were produced (one partition holds a subject's events).
    const order = await writtenOrder();
    for (let subject = 0; subject < SUBJECTS; subject += 1) {
      const ns = order.filter((id) => id.startsWith(`scale-s${subject}-`)).map((id) => Number(id.split('-').at(-1)));
      expect(ns, `subject ${subject}`).toEqual(Array.from({ length: TOTAL / SUBJECTS }, (_, n) => n));
    }
    // And every one is in the projections: readable through the API. The projections are a fold
    // of memory.events, so first the projector's group has committed all of it: on a loaded machine
    // a scale-in's rebalance can hold a partition for a session timeout and more, and the reads
    // below would otherwise race it one by one.
    await projectorCaughtUp();
    const reader = await issue();
    for (const r of requests) {
      await eventually(`read ${String(r.id)}`, async () => (await api('GET', `/v1/memories/${String(r.id)}`, { token: reader })).status === 200, 60_000);
    }
  }, 600_000);

  /** Waits until the projector's group has committed every message of memory.events. */
  async function projectorCaughtUp(): Promise<void> {
    const bus = createKafkaBus({ brokers: connection().brokers, clientId: `verify-${randomUUID().slice(0, 6)}`, topicPrefix: `${namespace}.` });
    try {
      await eventually('the projector group committed all of memory.events', async () => {
        const [ends, committed] = await Promise.all([bus.endOffsets(TOPICS.events), bus.committedOffsets(CONSUMER_GROUPS.projector, TOPICS.events)]);
        return ends.every((end, p) => (committed[p] ?? 0) >= end);
      }, 240_000);
    } finally {
      await bus.close();
    }
  }

  /** The record ids of every MemoryWritten event on the raw log, partition by partition in offset order (ids in clear, content sealed). */
  async function writtenOrder(): Promise<string[]> {
    const bus = createKafkaBus({ brokers: connection().brokers, clientId: `verify-${randomUUID().slice(0, 6)}`, topicPrefix: `${namespace}.` });
    const ids: string[] = [];
    try {
      for await (const message of bus.readAll(TOPICS.events)) {
        const event = message.value as { type?: string; data?: { record?: { id?: string } } };
        const id = event.data?.record?.id;
        if (event.type === 'MemoryWritten' && id !== undefined) ids.push(id);
      }
    } finally {
      await bus.close();
    }
    return ids;
  }

  /**
   * How many WriteMemory commands on the raw log (read_committed) each ingest request has. A
   * request is its writer's: the same requestId of another principal or tenant is another request.
   */
  async function ingestCommandCounts(): Promise<Map<string, number>> {
    const bus = createKafkaBus({ brokers: connection().brokers, clientId: `verify-${randomUUID().slice(0, 6)}`, topicPrefix: `${namespace}.` });
    const counts = new Map<string, number>();
    try {
      for await (const message of bus.readAll(TOPICS.commands)) {
        const { metadata } = message.value as { metadata?: { tenantId?: string; actor?: { principalId?: string }; ingestRequestId?: string } };
        if (metadata?.ingestRequestId === undefined) continue;
        const request = JSON.stringify([metadata.tenantId, metadata.actor?.principalId, metadata.ingestRequestId]);
        counts.set(request, (counts.get(request) ?? 0) + 1);
      }
    } finally {
      await bus.close();
    }
    return counts;
  }

  /** How many MemoryWritten events each record id has. */
  async function writtenIds(): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const id of await writtenOrder()) counts.set(id, (counts.get(id) ?? 0) + 1);
    return counts;
  }
});
