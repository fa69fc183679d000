import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel } from 'kafkajs';
import { createKafkaBus } from '@gm/bus';
import { CONSUMER_GROUPS, GROUP_SUBSCRIPTIONS, TOPICS, type Action, type IssueCapabilityRequest, type OpsOverview } from '@gm/contracts';
import { servicesOf, startStack, type ServiceName, type Stack } from '@gm/distributed';
import { MemoryClient, type WriteMemory } from '@gm/client';
import { engineEndpoint } from '@gm/testing';
import { apiClient, capabilityIssuer, eventually, memory } from '../e2e/harness.ts';

/** An event as the raw log holds it: ids and versions in clear, content sealed (not read here). */
interface SealedEventShape {
  type: string;
  data: { record?: { id: string; version: number } };
  metadata: { eventId: string };
}
const SealedEventShape = {
  parse(value: unknown): SealedEventShape {
    const event = value as SealedEventShape;
    if (typeof event?.type !== 'string' || typeof event.metadata?.eventId !== 'string') throw new Error('not a memory event');
    return event;
  },
};
const ROOT = path.resolve(import.meta.dirname, '../..');

/** The distributed runtime: seven processes on real Kafka, Elasticsearch and Redis. */
describe('distributed runtime (separate processes on Kafka, Elasticsearch, Redis)', () => {
  let stack: Stack;
  let dataDir: string;
  const namespace = `e2e-${randomUUID().slice(0, 8)}`;
  const lines: string[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-dist-'));
    stack = await startStack({
      dataDir, port: 0, namespace, onLine: (s, l) => lines.push(`[${s}] ${l}`),
      // An outage makes the API wait for projections that cannot move: keep that wait shorter than
      // the 5 s default here (1 s proved too short on a loaded 2-core CI machine: see the warm-up).
      // Tests pin 4 partitions (the default is 12): fewer transactional ids to fence on one broker.
      env: { MEMORY_READ_YOUR_WRITES_TIMEOUT: '3s', MEMORY_RATE_LIMIT_PER_MINUTE: '100000', MEMORY_PARTITIONS: '4' },
    });
    // One write end to end before the tests: the stack's first write pays one-time costs (the
    // hour's transit key, the first subject keys, each key-store follower's first fetch, a
    // consumer group's first fold). With a 1 s read-your-writes wait, on a loaded CI machine that
    // first write outran the wait three runs in a row and the walkthrough's next search missed it.
    const token = await issue();
    const warm = await fetch(`${stack.url}/v1/memories`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(memory({ id: 'warm-up-1', subjectId: 'warm-up', content: 'Xylophone tuning note' })),
    });
    expect(warm.status).toBe(201);
    await eventually('the warm-up write readable', async () => {
      const res = await fetch(`${stack.url}/v1/memories/warm-up-1`, { headers: { authorization: `Bearer ${token}` } });
      return res.status === 200;
    }, 60_000);
  }, 180_000);
  afterAll(async () => {
    await stack?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  /** A capability for dist-bot, with the member grant its actions need (see the e2e harness). */
  const issue = (actions: Action[] = ['write', 'read', 'search', 'request_delete'], scopes?: IssueCapabilityRequest['scopes']) =>
    capabilityIssuer(apiClient(() => stack.url), () => readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim())({ agentId: 'dist-bot', actions, ...(scopes ? { scopes } : {}) });

  it("exports each consumer group's lag per partition on its service's /metrics", async () => {
    for (const [service, group, topic] of [
      ['projector', 'projector', 'memory.events'], ['write-admission', 'write-admission', 'memory.commands'], ['index-builder', 'summary-builder', 'memory.events'],
    ] as const) {
      // Each service says where its health endpoints are, once ready.
      const url = lines.map((l) => new RegExp(`^\\[${service}\\] ${service} ready: health on (http://\\S+)`).exec(l)?.[1]).find(Boolean);
      expect(url, service).toBeDefined();
      const text = await (await fetch(`${url}/metrics`)).text();
      for (const partition of [0, 1, 2, 3]) {
        expect(text, `${group} ${partition}`).toMatch(new RegExp(`^gm_consumer_lag\\{group="${group}",topic="${topic.replace('.', '\\.')}",partition="${partition}"\\} \\d+$`, 'm'));
      }
    }
  });

  it('runs each durable consumer group in the service and on the topics the deployment table names (the chart scales each service on them), and says each service is ready', async () => {
    const durable: ReadonlySet<string> = new Set(Object.values(CONSUMER_GROUPS));
    const running = servicesOf({ ...process.env, ...stack.env });
    const seen = new Map<string, { service: string; topics: Set<string> }>();
    for (const service of running) {
      const url = stack.metricsUrl(service);
      expect(url, service).toBeDefined();
      const text = await (await fetch(url!)).text();
      expect(text, service).toMatch(/^gm_ready 1$/m);
      for (const [, group, topic] of text.matchAll(/^gm_consumer_lag\{group="([^"]+)",topic="([^"]+)",partition="\d+"\}/gm)) {
        if (group === undefined || topic === undefined || !durable.has(group)) continue;
        const entry = seen.get(group) ?? { service, topics: new Set<string>() };
        // One group in two services would split its partitions between unrelated processes.
        expect(entry.service, group).toBe(service);
        entry.topics.add(topic);
        seen.set(group, entry);
      }
    }
    const declared = Object.entries(GROUP_SUBSCRIPTIONS).filter(([, s]) => running.includes(s.service));
    expect(Object.fromEntries([...seen].map(([group, e]) => [group, { service: e.service, topics: [...e.topics].sort() }])))
      .toEqual(Object.fromEntries(declared.map(([group, s]) => [group, { service: s.service, topics: [...s.topics].sort() }])));
  });

  it('aggregates every service\'s metrics in the ops overview, for an administrator', async () => {
    // The ops overview is tenant-wide administration: a capability scoped to the tenant, a grant on it.
    const admin = await issue(['admin'], [{ kind: 'tenant', id: 'acme' }]);
    const res = await fetch(`${stack.url}/v1/ops/overview`, { headers: { authorization: `Bearer ${admin}` } });
    expect(res.status).toBe(200);
    const overview = (await res.json()) as OpsOverview;
    // The broker reads the /metrics of each service the stack started before it, and its own.
    expect(overview.sources.length).toBe(servicesOf({ ...process.env, ...stack.env }).length);
    expect(overview.sources.every((s) => s.ok)).toBe(true);
    const groups = overview.consumers.map((c) => c.group);
    for (const group of ['write-admission', 'projector', 'summary-builder', 'deletion-orchestrator', 'receipt-verifier', 'retrieval-broker.deletion']) expect(groups).toContain(group);
    expect(overview.consumers.find((c) => c.group === 'projector')?.partitions).toHaveLength(4);
    // The warm-up write, counted by write-admission in its own process.
    expect(overview.counters.writes).toBeGreaterThanOrEqual(1);
  });

  it('runs the README walkthrough against the separate processes', async () => {
    // The walkthrough's root bootstraps maple's administration on a fresh memory; this stack's
    // earlier tests made harness-admin maple's administrator, which grants root the role first.
    await capabilityIssuer(apiClient(() => stack.url), () => readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim())({
      agentId: 'admin-console', principal: { id: 'root', kind: 'person' }, actions: ['admin'],
    });
    const output = await new Promise<string>((resolve, reject) => {
      const child = spawn('bash', ['scripts/walkthrough.sh', stack.url, dataDir], { cwd: ROOT, env: { ...process.env, WALKTHROUGH_RUN: 'd1' }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr.on('data', (c: Buffer) => (out += c.toString()));
      child.on('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`walkthrough exited ${code}:\n${out}\n${lines.slice(-30).join('\n')}`))));
    });
    expect(output).toContain('1 item(s): pref-1-d1\n');
    expect(output).toContain('2 item(s): pref-1-d1, tool-1-d1\n');
    expect(output).toContain('1 item(s): pref-2-d1\n');
    expect(output).toContain('0 item(s)\n');
    expect(output).toContain('status=verified records=pref-1-d1,pref-2-d1,tool-1-d1\n');
  }, 120_000);

  it('answers a receipt not signed yet with a retriable 409 naming the job, and the SDK waits for it', async () => {
    const token = await issue();
    const client = new MemoryClient({ baseUrl: stack.url, capability: token, retry: { attempts: 1 } });
    // No receipt-verifier: the job is carried out but never verified, so its receipt cannot be signed.
    await stack.kill('receipt-verifier', 'SIGTERM');
    let jobId = '';
    try {
      await client.remember(memory({ id: 'receipt-later', subjectId: 'cust-receipt', content: 'Grebe account closes on Friday' }) as WriteMemory);
      jobId = (await client.delete('receipt-later')).jobId;
      const early = await fetch(`${stack.url}/v1/deletion-jobs/${jobId}/receipt`, { headers: { authorization: `Bearer ${token}` } });
      const problem = (await early.json()) as { code: string; detail: string };
      expect([early.status, problem.code]).toEqual([409, 'MEM_NOT_YET_AVAILABLE']);
      expect(problem.detail).toContain(jobId);
      // A job that does not exist is still the uniform 404.
      expect((await fetch(`${stack.url}/v1/deletion-jobs/01J0000000000000000000000Z/receipt`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(404);
      await expect(client.waitForReceipt(jobId, { timeoutMs: 1_500, intervalMs: 200 })).rejects.toMatchObject({ code: 'MEM_NOT_YET_AVAILABLE', retriable: true });
    } finally {
      await stack.start('receipt-verifier');
    }
    const receipt = await client.waitForReceipt(jobId, { timeoutMs: 120_000 });
    expect(receipt.payload).toMatchObject({ jobId, status: 'verified' });
  }, 240_000);

  it('leaves no consumer group behind when services restart: the durable groups stay, and each process has one key-store follower', async () => {
    const admin = new Kafka({ clientId: `groups-${randomUUID().slice(0, 6)}`, brokers: engineEndpoint('kafka').split(','), logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    try {
      // Reading a partition (readPartition: replays, write-admission's catch-up) takes no group at all.
      const groups = async () => (await admin.listGroups()).groups.map((g) => g.groupId)
        .filter((g) => g.startsWith(`${namespace}.`)).map((g) => g.slice(namespace.length + 1)).sort();
      const transient = /^(gm-keys|retrieval-broker\.replies)\./;
      const shape = (names: string[]) => ({
        durable: names.filter((g) => !transient.test(g)),
        keyFollowers: names.filter((g) => g.startsWith('gm-keys.')).length,
        replyGroups: names.filter((g) => g.startsWith('retrieval-broker.replies.')).length,
      });
      const before = await groups();
      expect(shape(before).replyGroups).toBe(1);
      for (const service of ['retrieval-broker', 'projector'] as ServiceName[]) {
        await stack.kill(service, 'SIGTERM');
        await stack.start(service);
      }
      const after = await groups();
      expect(shape(after)).toEqual(shape(before));
      // The restarted processes' followers are new groups; their predecessors' are gone.
      expect(after.filter((g) => transient.test(g) && !before.includes(g))).toHaveLength(3);
    } finally {
      await admin.disconnect();
    }
  }, 120_000);

  for (const victim of ['write-admission', 'projector', 'index-builder'] as ServiceName[]) {
    it(`keeps every acknowledged write exactly once when ${victim} is killed with SIGKILL mid-stream`, async () => {
      const token = await issue();
      const acknowledged = new Map<string, string>();
      let stop = false;
      const lane = async (n: number) => {
        for (let i = 0; !stop; i += 1) {
          const id = `${victim}-${n}-${i}`;
          const content = `Stream ${victim} lane ${n} item ${i} osprey`;
          try {
            const res = await fetch(`${stack.url}/v1/memories`, {
              method: 'POST',
              headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
              body: JSON.stringify(memory({ id, subjectId: `s-${victim}-${i % 4}`, content })),
              signal: AbortSignal.timeout(20_000),
            });
            if (res.status === 201) acknowledged.set(id, content);
          } catch {
            // timed out while the victim was down: not acknowledged
          }
        }
      };
      const lanes = [0, 1, 2].map(lane);
      await eventually('some writes', async () => acknowledged.size >= 20, 60_000);
      await stack.kill(victim, 'SIGKILL');
      await stack.start(victim);
      await eventually('more writes after restart', async () => acknowledged.size >= 40, 90_000);
      stop = true;
      await Promise.all(lanes);

      const reader = await issue(['read', 'search']);
      for (const [id, content] of acknowledged) {
        const body = await eventually(`read ${id}`, async () => {
          const res = await fetch(`${stack.url}/v1/memories/${id}`, { headers: { authorization: `Bearer ${reader}` } });
          return res.status === 200 ? ((await res.json()) as { content: string }) : undefined;
        }, 30_000);
        expect(body.content).toBe(content);
      }
      // The search index converges: every acknowledged record is searchable by its unique words.
      const sample = [...acknowledged.keys()].slice(-5);
      for (const id of sample) {
        const [, lane, item] = /-(\d+)-(\d+)$/.exec(id) ?? [];
        await eventually(`search finds ${id}`, async () => {
          const res = await fetch(`${stack.url}/v1/search`, {
            method: 'POST', headers: { authorization: `Bearer ${reader}`, 'content-type': 'application/json' },
            body: JSON.stringify({ query: `osprey lane ${lane} item ${item}`, subjectId: `s-${victim}-${Number(item) % 4}`, limit: 50 }),
          });
          if (res.status !== 200) return undefined;
          const packet = (await res.json()) as { items: Array<{ recordId: string }> };
          return packet.items.some((x) => x.recordId === id);
          // A SIGKILLed member keeps its partitions until its session times out (10 s), then the
          // restarted one works off the backlog: one transaction and one refresh per event.
        }, 120_000);
      }

      // No event duplicated or reordered per key (read_committed view of memory.events).
      const bus = createKafkaBus({ brokers: engineEndpoint('kafka').split(','), clientId: `verify-${randomUUID().slice(0, 6)}`, topicPrefix: `${namespace}.` });
      const seen = new Set<string>();
      const versions = new Map<string, number>();
      try {
        for await (const message of bus.readAll(TOPICS.events)) {
          // The raw log holds sealed content (§8.5): check what ordering needs, never the content.
          const event = SealedEventShape.parse(message.value);
          expect(seen.has(event.metadata.eventId), event.metadata.eventId).toBe(false);
          seen.add(event.metadata.eventId);
          if (event.type === 'MemoryWritten' && event.data.record) {
            expect(event.data.record.version).toBe((versions.get(event.data.record.id) ?? 0) + 1);
            versions.set(event.data.record.id, event.data.record.version);
          }
        }
      } finally {
        await bus.close();
      }
      for (const id of acknowledged.keys()) expect(versions.get(id)).toBe(1);
    }, 300_000);
  }

  it('keeps admitting writes while Elasticsearch is down, fails searches closed, and catches up after', async () => {
    const token = await issue();
    const engines = (action: string) =>
      new Promise<void>((resolve, reject) => {
        const child = spawn('bash', ['infra/local/engines.sh', action, 'elasticsearch'], { cwd: ROOT, stdio: 'ignore' });
        child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`engines.sh ${action} elasticsearch exited ${code}: the outage specs stop and start this checkout's local engines (infra/local), not engines named by env URLs elsewhere`))));
      });
    const post = (route: string, body: unknown) =>
      fetch(`${stack.url}${route}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    await engines('stop');
    try {
      for (let i = 0; i < 3; i += 1) {
        const res = await post('/v1/memories', memory({ id: `outage-${i}`, subjectId: 'cust-outage', content: `Outage heron note ${i}` }));
        expect(res.status).toBe(201);
      }
      const search = await post('/v1/search', { query: 'outage heron' });
      expect(search.status).toBe(503);
      expect(((await search.json()) as { code: string }).code).toBe('MEM_UNAVAILABLE');
      // Get-by-id reads the record hash and tombstones in Redis, not the index: still governed.
      const read = await fetch(`${stack.url}/v1/memories/outage-0`, { headers: { authorization: `Bearer ${token}` } });
      expect(read.status).toBe(200);
    } finally {
      await engines('start');
    }
    const found = await eventually('the index caught up', async () => {
      const res = await post('/v1/search', { query: 'outage heron', limit: 10 });
      if (res.status !== 200) return undefined;
      const ids = ((await res.json()) as { items: Array<{ recordId: string }> }).items.map((i) => i.recordId).sort();
      return ids.length === 3 ? ids : undefined;
    }, 120_000);
    expect(found).toEqual(['outage-0', 'outage-1', 'outage-2']);
    const dlq = lines.filter((l) => l.includes('dead-letter'));
    expect(dlq).toEqual([]);
  }, 300_000);

  /** Starts a projector on the stack's env plus `env`, and waits for it to exit: its code and what it said. */
  async function projectorExit(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
    const child = spawn(process.execPath, ['--import', 'tsx', 'services/projector/src/main.ts'], {
      cwd: ROOT, env: { ...process.env, ...stack.env, ...env, HEALTH_PORT: '0' }, stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    return { code, stderr };
  }

  it('refuses to start a service whose MEMORY_PARTITIONS differs from the topics, naming the topic and both counts', async () => {
    const { code, stderr } = await projectorExit({ MEMORY_PARTITIONS: '6' });
    expect(code).toBe(2);
    expect(stderr).toMatch(/projector: topic "memory\.[a-z.]+" has 4 partitions, but 6 were asked for/);
    // The running stack is untouched: its topics keep their count.
    const bus = createKafkaBus({ brokers: engineEndpoint('kafka').split(','), clientId: `verify-${randomUUID().slice(0, 6)}`, topicPrefix: `${namespace}.` });
    try {
      expect(await bus.endOffsets('memory.commands')).toHaveLength(4);
    } finally {
      await bus.close();
    }
  }, 60_000);

  it('exits 2 naming HEALTH_HOST when it is not an address, or not one this host can listen on', async () => {
    const malformed = await projectorExit({ HEALTH_HOST: 'not a host!' });
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toContain('HEALTH_HOST: an IP address or a host name');
    // TEST-NET-3: an address no interface of this machine has.
    const foreign = await projectorExit({ HEALTH_HOST: '203.0.113.7' });
    expect(foreign.code).toBe(2);
    expect(foreign.stderr).toContain('projector: HEALTH_HOST/HEALTH_PORT: cannot listen on 203.0.113.7:0 (EADDRNOTAVAIL)');
  }, 90_000);

  it('refuses to start a production service on topics replicated below its settings, naming each topic and both values', async () => {
    const { code, stderr } = await projectorExit({ MEMORY_PRODUCTION: 'true' });
    expect(code).toBe(2);
    expect(stderr).toContain('projector: MEMORY_PRODUCTION: refusing to start on topics that could lose acknowledged records');
    // The local engine is one broker: every topic is below the production default of 3 (min ISR 2).
    expect(stderr).toContain('memory.events: replication factor 1, below the required 3');
    expect(stderr).toContain('policy.changes: min.insync.replicas 1, below the required 2');
    // The stack created its sources of truth to keep every record: no retention complaint.
    expect(stderr).not.toContain('retention');
  }, 60_000);

  it('with two write-admission instances splitting the partitions, concurrent conflicting writes have exactly one winner', async () => {
    await stack.start('write-admission');
    expect(stack.children.get('write-admission')?.length).toBe(2);
    const token = await issue();
    for (let round = 0; round < 4; round += 1) {
      const subject = `race-subject-${round}`;
      const statuses = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          fetch(`${stack.url}/v1/memories`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify(memory({ id: `race-${round}`, subjectId: subject, content: `Racer ${i} claims round ${round}` })),
          }).then((r) => r.status),
        ),
      );
      expect(statuses.filter((s) => s === 201)).toHaveLength(1);
      expect(statuses.filter((s) => s === 409)).toHaveLength(7);
    }
  }, 120_000);

  it('fails closed while Redis is down (capability revocation cannot be checked), and recovers after', async () => {
    const token = await issue();
    const engines = (action: string) =>
      new Promise<void>((resolve, reject) => {
        const child = spawn('bash', ['infra/local/engines.sh', action, 'redis'], { cwd: ROOT, stdio: 'ignore' });
        child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`engines.sh ${action} redis exited ${code}: the outage specs stop and start this checkout's local engines (infra/local), not engines named by env URLs elsewhere`))));
      });
    const post = (route: string, body: unknown) =>
      fetch(`${stack.url}${route}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    await engines('stop');
    try {
      const write = await post('/v1/memories', memory({ id: 'redis-out-0', subjectId: 'cust-redis', content: 'Redis outage plover note' }));
      expect(write.status).toBe(503);
      const search = await post('/v1/search', { query: 'plover' });
      expect(search.status).toBe(503);
      expect(((await search.json()) as { code: string }).code).toBe('MEM_UNAVAILABLE');
    } finally {
      await engines('start');
    }
    // Every service reconnects by itself: a write then round-trips through all of them.
    const written = await eventually('writes admitted again', async () => {
      const res = await post('/v1/memories', memory({ id: 'redis-out-1', subjectId: 'cust-redis', content: 'Redis outage plover note after' }));
      return res.status === 201 ? res.status : undefined;
    }, 60_000);
    expect(written).toBe(201);
    const found = await eventually('searchable again', async () => {
      const res = await post('/v1/search', { query: 'plover' });
      if (res.status !== 200) return undefined;
      const ids = ((await res.json()) as { items: Array<{ recordId: string }> }).items.map((i) => i.recordId);
      return ids.includes('redis-out-1') ? ids : undefined;
    }, 60_000);
    expect(found).not.toContain('redis-out-0');
    for (const service of ['write-admission', 'projector', 'index-builder', 'retrieval-broker'] as ServiceName[]) {
      expect(stack.children.get(service)?.every((c) => c.exitCode === null), `${service} still running`).toBe(true);
    }
  }, 180_000);
});
