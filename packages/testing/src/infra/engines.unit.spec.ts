import { afterEach, describe, expect, it, vi } from 'vitest';
import { engineEnv, namedByEnv } from './engines.ts';

afterEach(() => {
  vi.unstubAllEnvs();
});

/** No engine named: what a developer's shell without engine variables has. */
function clearEngineEnv(): void {
  for (const name of ['KAFKA_BROKERS', 'REDIS_URL', 'ELASTICSEARCH_URL', 'REDIS_SENTINELS', 'REDIS_SENTINEL_NAME']) vi.stubEnv(name, undefined);
}

describe('the engines a stack is given', () => {
  it('are the local launcher\'s development engines when the env names none', () => {
    clearEngineEnv();
    expect(namedByEnv('redis')).toBe(false);
    expect(engineEnv()).toEqual({
      KAFKA_BROKERS: '127.0.0.1:19092', REDIS_URL: 'redis://127.0.0.1:16379', ELASTICSEARCH_URL: 'http://127.0.0.1:19200',
    });
  });

  it('are the local cluster when the env names it, Redis by its Sentinels and without REDIS_URL', () => {
    clearEngineEnv();
    vi.stubEnv('KAFKA_BROKERS', '127.0.0.1:29092,127.0.0.1:29093,127.0.0.1:29094');
    vi.stubEnv('ELASTICSEARCH_URL', 'http://127.0.0.1:29200,http://127.0.0.1:29201');
    vi.stubEnv('REDIS_SENTINELS', '127.0.0.1:26479,127.0.0.1:26480,127.0.0.1:26481');
    vi.stubEnv('REDIS_SENTINEL_NAME', 'gm-primary');
    expect(namedByEnv('redis')).toBe(true);
    expect(engineEnv()).toEqual({
      KAFKA_BROKERS: '127.0.0.1:29092,127.0.0.1:29093,127.0.0.1:29094',
      ELASTICSEARCH_URL: 'http://127.0.0.1:29200,http://127.0.0.1:29201',
      REDIS_SENTINELS: '127.0.0.1:26479,127.0.0.1:26480,127.0.0.1:26481',
      REDIS_SENTINEL_NAME: 'gm-primary',
    });
  });
});
