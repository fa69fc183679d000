/**
 * The `memory.keys` key store on Kafka, against the key-store contract, plus the keyring over
 * it as two services would run it. Each harness owns a topic prefix, which cleanup deletes.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { ConfigResourceTypes, Kafka, logLevel, type Admin } from 'kafkajs';
import { afterAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { createKafkaBus, type Bus } from '@gm/bus';
import { keysLogBytes, testKeyStore, type KeyStoreHarness } from '@gm/testing/contracts/key-store';
import { engineEndpoint } from '@gm/testing/engines';
import type { Envelope } from '../envelope.ts';
import type { KeyStore } from '../key-store.ts';
import { openKeyring } from '../keyring.ts';
import { masterKeys } from '../master-keys.ts';
import { KEYS_TOPIC, openBusKeyStore } from './bus-key-store.ts';

const brokers = (): string[] => engineEndpoint('kafka').split(',');

let adminClient: Promise<Admin> | undefined;
const admin = (): Promise<Admin> => {
  adminClient ??= (async () => {
    const client = new Kafka({ clientId: 'gm-crypto-spec-cleanup', brokers: brokers(), logLevel: logLevel.NOTHING }).admin();
    await client.connect();
    return client;
  })();
  return adminClient;
};
afterAll(async () => {
  await (await adminClient)?.disconnect();
});

async function deleteNamespace(prefix: string): Promise<void> {
  const client = await admin();
  const topics = (await client.listTopics()).filter((t) => t.startsWith(prefix));
  if (topics.length > 0) await client.deleteTopics({ topics });
}

/** Instances (bus + store) over one namespace: each `open` is another service or a restart. */
async function kafkaHarness(): Promise<KeyStoreHarness & { bus: Bus; topicPrefix: string }> {
  const topicPrefix = `gm-crypto-${randomUUID().slice(0, 8)}.`;
  const buses: Bus[] = [];
  const stores: KeyStore[] = [];
  const newBus = (): Bus => {
    const bus = createKafkaBus({ brokers: brokers(), clientId: 'gm-crypto-spec', topicPrefix, transactionalIdPrefix: topicPrefix });
    buses.push(bus);
    return bus;
  };
  const open = async (): Promise<KeyStore> => {
    const store = await openBusKeyStore({ bus: newBus(), partitions: 2 });
    stores.push(store);
    return store;
  };
  const bus = newBus();
  return {
    bus,
    topicPrefix,
    store: await open(),
    open,
    persistedBytes: () => keysLogBytes(bus),
    cleanup: async () => {
      for (const store of stores) await store.close();
      for (const b of buses) await b.close();
      await deleteNamespace(topicPrefix);
    },
  };
}

testKeyStore('kafka (memory.keys)', kafkaHarness);

describe('keyring over memory.keys on Kafka', () => {
  const M1 = randomBytes(32);
  const keys = masterKeys('m1', new Map([['m1', M1]]));

  async function open() {
    const h = await kafkaHarness();
    onTestFinished(() => h.cleanup());
    return h;
  }

  it('a forget in one service reaches another service’s cache through the topic, before its TTL', async () => {
    const h = await open();
    const writer = await openKeyring({ masterKeys: keys, store: h.store });
    const reader = await openKeyring({ masterKeys: keys, store: await h.open(), ttlMs: 60 * 60_000 });
    onTestFinished(() => {
      writer.close();
      reader.close();
    });
    const aad = { tenantId: 't1', subjectId: 'alice', recordId: 'r1', version: 1 };
    const sibling = { ...aad, subjectId: 'bob', recordId: 'r2' };
    const env = await writer.encrypt('alice likes tea', aad);
    const envBob = await writer.encrypt('bob likes coffee', sibling);
    expect(await reader.decrypt(env, aad)).toBe('alice likes tea');
    await writer.forgetSubject('t1', 'alice');
    await vi.waitFor(() => expect(reader.cachedKeyIds()).not.toContain(writer.subjectKekId('t1', 'alice')), { timeout: 10_000, interval: 50 });
    await expect(reader.decrypt(env, aad)).rejects.toMatchObject({ reason: 'KEY_DESTROYED' });
    expect(await reader.decrypt(envBob, sibling)).toBe('bob likes coffee');
  });

  it('a restarted service with a wrong master key fails to open; rotation keeps everything readable', async () => {
    const h = await open();
    const keyring = await openKeyring({ masterKeys: keys, store: h.store });
    onTestFinished(() => keyring.close());
    const aads = ['a', 'b', 'c'].map((s, i) => ({ tenantId: 't1', subjectId: s, recordId: `r${i}`, version: 1 }));
    const envs = await Promise.all(aads.map((aad) => keyring.encrypt(`content ${aad.recordId}`, aad)));
    await expect(openKeyring({ masterKeys: masterKeys('m1', new Map([['m1', randomBytes(32)]])), store: await h.open() })).rejects.toMatchObject({
      reason: 'MASTER_KEY_MISMATCH',
      message: expect.stringContaining('"m1"'),
    });
    const M2 = randomBytes(32);
    // Three KEKs and the pseudonym key.
    expect(await keyring.rotateMasterKey({ id: 'm2', key: M2 })).toEqual({ rewrapped: 4, destroyedMeanwhile: 0 });
    const restarted = await openKeyring({ masterKeys: masterKeys('m2', new Map([['m2', M2]])), store: await h.open() });
    onTestFinished(() => restarted.close());
    for (const [i, aad] of aads.entries()) expect(await restarted.decrypt(envs[i] as Envelope, aad)).toBe(`content ${aad.recordId}`);
  });

  it('creates the data keys of records sealed together with one catch-up and one produce per partition, readable by another service', async () => {
    const h = await open();
    // The store over a bus that counts the round trips creating keys costs.
    const counts = { produce: 0, endOffsets: 0 };
    const inner = createKafkaBus({ brokers: brokers(), clientId: 'gm-crypto-spec', topicPrefix: h.topicPrefix, transactionalIdPrefix: h.topicPrefix });
    onTestFinished(() => inner.close());
    const counted = new Proxy(inner, {
      get: (target, prop, receiver) => {
        if (prop === 'produce') return (messages: Parameters<Bus['produce']>[0]) => ((counts.produce += 1), target.produce(messages));
        if (prop === 'endOffsets') return (topic: string) => ((counts.endOffsets += 1), target.endOffsets(topic));
        const value: unknown = Reflect.get(target, prop, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const store = await openBusKeyStore({ bus: counted, partitions: 2 });
    onTestFinished(() => store.close());
    const keyring = await openKeyring({ masterKeys: keys, store });
    onTestFinished(() => keyring.close());
    // The subject's KEK first, so that what follows creates data keys only.
    await keyring.encrypt('first', { tenantId: 't1', subjectId: 'alice', recordId: 'r0', version: 1 });
    counts.produce = 0;
    counts.endOffsets = 0;
    const aads = Array.from({ length: 20 }, (_, i) => ({ tenantId: 't1', subjectId: 'alice', recordId: `r${i + 1}`, version: 1 }));
    const envs = await Promise.all(aads.map((aad) => keyring.encrypt(`note ${aad.recordId}`, aad)));
    // One catch-up for all the misses; one produce per partition of memory.keys (2 here), not one per key.
    expect(counts.endOffsets).toBe(1);
    expect(counts.produce).toBeLessThanOrEqual(2);
    const reader = await openKeyring({ masterKeys: keys, store: await h.open() });
    onTestFinished(() => reader.close());
    for (const [i, aad] of aads.entries()) expect(await reader.decrypt(envs[i] as Envelope, aad)).toBe(`note ${aad.recordId}`);
  });

  it('writes a destroyed marker as the newest record of a destroyed key, on a compacted topic, and says the old record awaits compaction', async () => {
    const h = await open();
    const keyring = await openKeyring({ masterKeys: keys, store: h.store });
    onTestFinished(() => keyring.close());
    await keyring.encrypt('x', { tenantId: 't1', subjectId: 'alice', recordId: 'r1', version: 1 });
    expect(await keyring.forgetSubject('t1', 'alice')).toEqual({ residue: 'until_compaction' });
    const kid = keyring.subjectKekId('t1', 'alice', 1);
    const records: unknown[] = [];
    for await (const m of h.bus.readAll(KEYS_TOPIC)) if (m.key === kid) records.push(m.value);
    expect(records.at(-1)).toEqual({ v: 1, destroyed: true });
    const { resources } = await (await admin()).describeConfigs({
      includeSynonyms: false,
      resources: [{ type: ConfigResourceTypes.TOPIC, name: `${h.topicPrefix}${KEYS_TOPIC}`, configNames: ['cleanup.policy'] }],
    });
    expect(resources[0]?.configEntries.find((e) => e.configName === 'cleanup.policy')?.configValue).toBe('compact');
  });
});
