import { afterEach, describe, expect, it, vi } from 'vitest';
import { DistributedEnv, WithElasticsearch, WithRedis } from '@gm/config';
import { parseEnvOrExit } from './run-service.ts';

const ServiceEnv = DistributedEnv.extend({ ...WithRedis.shape, ...WithElasticsearch.shape });
const BASE = { KAFKA_BROKERS: '127.0.0.1:29092,127.0.0.1:29093', ELASTICSEARCH_URL: 'http://127.0.0.1:29200,http://127.0.0.1:29201' };

/** What a service started with `env` says on stderr and exits with; the parsed env when it starts. */
function start(env: Record<string, string>): { exit?: number; stderr: string; parsed?: unknown } {
  let stderr = '';
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stderr += String(chunk);
    return true;
  });
  class Exit extends Error {
    constructor(readonly code: number) {
      super(`exit ${code}`);
    }
  }
  vi.spyOn(process, 'exit').mockImplementation((code?: string | number | null) => {
    throw new Exit(Number(code));
  });
  try {
    return { stderr, parsed: parseEnvOrExit(ServiceEnv, env, 'projector') };
  } catch (err) {
    if (err instanceof Exit) return { exit: err.code, stderr };
    throw err;
  }
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a service reading Redis and Elasticsearch from its env', () => {
  it('starts on Sentinels and a list of Elasticsearch nodes', () => {
    const started = start({ ...BASE, REDIS_SENTINELS: '127.0.0.1:26479,127.0.0.1:26480', REDIS_SENTINEL_NAME: 'gm-primary' });
    expect(started.exit).toBeUndefined();
    expect(started.parsed).toMatchObject({
      REDIS_SENTINELS: [{ host: '127.0.0.1', port: 26479 }, { host: '127.0.0.1', port: 26480 }],
      ELASTICSEARCH_URL: ['http://127.0.0.1:29200', 'http://127.0.0.1:29201'],
    });
  });

  it('starts on one Redis URL, as before', () => {
    expect(start({ ...BASE, REDIS_URL: 'redis://127.0.0.1:16379' }).exit).toBeUndefined();
  });

  it('exits 2 naming REDIS_URL when both REDIS_URL and REDIS_SENTINELS are set', () => {
    const started = start({ ...BASE, REDIS_URL: 'redis://127.0.0.1:16379', REDIS_SENTINELS: '127.0.0.1:26479', REDIS_SENTINEL_NAME: 'gm-primary' });
    expect(started.exit).toBe(2);
    expect(started.stderr).toContain('projector: invalid configuration:\n  REDIS_URL: set either REDIS_URL (one Redis) or REDIS_SENTINELS (Sentinel failover), not both');
  });

  it('exits 2 naming REDIS_URL when neither is set', () => {
    const started = start(BASE);
    expect(started.exit).toBe(2);
    expect(started.stderr).toMatch(/REDIS_URL: required/);
  });

  it('exits 2 naming REDIS_SENTINEL_NAME when the Sentinels come without it, beside any other problem', () => {
    const started = start({ ...BASE, ELASTICSEARCH_URL: 'nonsense', REDIS_SENTINELS: '127.0.0.1:26479' });
    expect(started.exit).toBe(2);
    expect(started.stderr).toContain('ELASTICSEARCH_URL: not an http(s) URL: nonsense');
    expect(started.stderr).toContain('REDIS_SENTINEL_NAME: required with REDIS_SENTINELS');
  });
});
