import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, startEmbeddedRuntime } from '@gm/embedded';
import { TestClock } from '../e2e/harness.ts';
import { parseReply, type GovClient, type Reply } from './client.ts';
import type { Asker } from './model.ts';

/** Speaks the HTTP API v1 of a running runtime. */
function httpClient(name: string, url: () => string, credential: () => string, time: Pick<GovClient, 'now' | 'advance'>, close: () => Promise<void>): GovClient {
  const call = async (method: string, route: string, token: string, body?: unknown): Promise<Reply> => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}` };
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(`${url()}${route}`, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return parseReply(response.status, await response.text());
  };
  return {
    name,
    ...time,
    async issue(tenant: string, asker: Asker) {
      const reply = await call('POST', '/v1/capabilities', credential(), {
        tenant, agentId: asker.agentId, principal: { id: asker.principal, kind: 'person' },
        scopes: [...asker.scopes, ...(asker.tenantWide === true ? [{ kind: 'tenant', id: tenant }] : [])], purpose: asker.purpose, actions: asker.actions,
      });
      if (reply.status !== 201) throw new Error(`capability issue failed: ${reply.status} ${String(reply.body?.code)}`);
      return { token: String(reply.body?.token), jti: String(reply.body?.jti) };
    },
    call,
    close,
  };
}

/** The embedded runtime in this process, on a temporary data directory, with a test clock. */
export async function embeddedClient(): Promise<GovClient> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-govbench-'));
  const clock = new TestClock();
  const config = loadConfig({
    MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'warn', MEMORY_EXPIRY_TICK: '50ms',
    MEMORY_DELETION_VERIFY_RETRY: '50ms', MEMORY_RATE_LIMIT_PER_MINUTE: '1000000',
  });
  const runtime = await startEmbeddedRuntime(config, { clock });
  return httpClient('ours (embedded)', () => runtime.url, () => runtime.credentials.issuerCredential,
    { now: () => clock.ms, advance: async (ms) => clock.advance(ms) },
    async () => {
      await runtime.close();
      rmSync(dataDir, { recursive: true, force: true });
    });
}

/** A runtime already running at `url` (time is real: advancing waits). */
export function urlClient(url: string, credentialFile: string, name = 'ours (remote)'): GovClient {
  const credential = readFileSync(credentialFile, 'utf8').trim();
  return httpClient(name, () => url, () => credential, realTime(), async () => undefined);
}

/** Starts the distributed stack (seven processes on Kafka, Elasticsearch and Redis) in a namespace of its own. */
export async function distributedClient(namespace: string): Promise<GovClient> {
  const { startStack } = await import('@gm/distributed');
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-govbench-dist-'));
  const stack = await startStack({
    dataDir, port: 0, namespace,
    env: { MEMORY_LOG_LEVEL: 'warn', MEMORY_EXPIRY_TICK: '50ms', MEMORY_DELETION_VERIFY_RETRY: '50ms', MEMORY_RATE_LIMIT_PER_MINUTE: '1000000' },
  });
  const credential = readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim();
  return httpClient('ours (distributed)', () => stack.url, () => credential, realTime(), async () => {
    await stack.stop();
    rmSync(dataDir, { recursive: true, force: true });
    // Topics, groups, indices and keys of this namespace only; the engines keep running.
    const { sweepNamespace } = await import('@gm/bench/cleanup');
    const env = stack.env;
    await sweepNamespace({ kafkaBrokers: String(env.KAFKA_BROKERS), redisUrl: String(env.REDIS_URL), elasticsearchUrl: String(env.ELASTICSEARCH_URL) }, namespace);
  });
}

function realTime(): Pick<GovClient, 'now' | 'advance'> {
  return { now: () => Date.now(), advance: (ms) => new Promise((resolve) => setTimeout(resolve, ms)) };
}
