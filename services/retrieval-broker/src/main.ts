import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { z } from 'zod';
import { TOPICS } from '@gm/contracts';
import type { SigningKeyPair } from '@gm/policy';
import {
  DistributedEnv, WithElasticsearch, WithRedis, duration, integer, openBus, openIndex, openState, runService, systemClock,
} from '@gm/service-kit';
import { startRetrievalBroker } from './start.ts';

/** retrieval-broker as its own process: the HTTP API of design §9. Scale it by adding instances. */
const Env = DistributedEnv.extend({
  ...WithRedis.shape,
  ...WithElasticsearch.shape,
  MEMORY_HOST: z.string().min(1).default('127.0.0.1'),
  MEMORY_PORT: integer(8080, 0, 65535),
  /** JSON `{privateJwk, publicJwk}` (Ed25519), as written by the embedded runtime or the stack launcher. */
  MEMORY_SIGNING_KEY_FILE: z.string().min(1),
  MEMORY_ISSUER_CREDENTIAL_FILE: z.string().min(1),
  MEMORY_ISSUER_NAME: z.string().min(1).default('governed-memory'),
  MEMORY_INSTANCE_ID: z.string().regex(/^[A-Za-z0-9._-]+$/).default(`${hostname()}-${process.pid}`),
  MEMORY_RATE_LIMIT_PER_MINUTE: integer(1200, 1, 1_000_000),
  MEMORY_BODY_LIMIT_BYTES: integer(256 * 1024, 1024, 16 * 1024 * 1024),
  MEMORY_REQUEST_TIMEOUT: duration('30s', true),
  MEMORY_REPLY_TIMEOUT: duration('10s', true),
  MEMORY_READ_YOUR_WRITES_TIMEOUT: duration('5s', true),
  MEMORY_PACKET_TTL: duration('15m'),
  MEMORY_CACHE_TTL: duration('60s'),
});

await runService('retrieval-broker', Env, async ({ env, log, metrics }) => {
  const signing = JSON.parse(readFileSync(env.MEMORY_SIGNING_KEY_FILE, 'utf8')) as SigningKeyPair;
  const issuerCredential = readFileSync(env.MEMORY_ISSUER_CREDENTIAL_FILE, 'utf8').trim();
  if (issuerCredential.length < 32) throw new Error('MEMORY_ISSUER_CREDENTIAL_FILE must hold at least 32 characters');
  const bus = await openBus(env, `retrieval-broker-${env.MEMORY_INSTANCE_ID}`);
  const state = openState(env);
  const index = openIndex(env);
  const broker = await startRetrievalBroker({
    bus, index, state, clock: systemClock, log, metrics, signing, issuerCredential,
    issuerName: env.MEMORY_ISSUER_NAME, instanceId: env.MEMORY_INSTANCE_ID, host: env.MEMORY_HOST, port: env.MEMORY_PORT,
    config: {
      replyTimeoutMs: env.MEMORY_REPLY_TIMEOUT, readYourWritesTimeoutMs: env.MEMORY_READ_YOUR_WRITES_TIMEOUT,
      packetTtlMs: env.MEMORY_PACKET_TTL, cacheTtlMs: env.MEMORY_CACHE_TTL, rateLimitPerMinute: env.MEMORY_RATE_LIMIT_PER_MINUTE,
      bodyLimitBytes: env.MEMORY_BODY_LIMIT_BYTES, requestTimeoutMs: env.MEMORY_REQUEST_TIMEOUT,
    },
    ready: async () => (await state.kv.ping()) && (await index.count().then(() => true, () => false)) && (await bus.endOffsets(TOPICS.events)).length > 0,
  });
  process.stderr.write(`retrieval-broker listening on ${broker.url}\n`);
  return {
    handle: { close: async () => { await broker.close(); await bus.close(); await state.kv.close(); await index.close(); } },
    ready: async () => (await state.kv.ping()) && (await index.count().then(() => true, () => false)),
  };
});
