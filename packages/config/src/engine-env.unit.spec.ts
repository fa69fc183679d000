import { describe, expect, it } from 'vitest';
import { EnvConfigError, WithElasticsearch, WithRedis, redisConnectionOf, redisEnvProblems } from './shared.ts';

/** The messages a schema gives for `env`, by variable; none when it parses. */
function issuesOf(schema: typeof WithRedis | typeof WithElasticsearch, env: Record<string, string>): string[] {
  const parsed = schema.safeParse(env);
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('ELASTICSEARCH_URL', () => {
  it('takes one node URL', () => {
    expect(WithElasticsearch.parse({ ELASTICSEARCH_URL: 'http://127.0.0.1:19200' }).ELASTICSEARCH_URL).toEqual(['http://127.0.0.1:19200']);
  });

  it('takes the comma-separated URLs of the nodes of one cluster, spaces and empty entries ignored', () => {
    expect(WithElasticsearch.parse({ ELASTICSEARCH_URL: 'http://127.0.0.1:29200, http://127.0.0.1:29201,' }).ELASTICSEARCH_URL)
      .toEqual(['http://127.0.0.1:29200', 'http://127.0.0.1:29201']);
  });

  it('names the entry that is not an http(s) URL', () => {
    expect(issuesOf(WithElasticsearch, { ELASTICSEARCH_URL: 'http://127.0.0.1:29200,127.0.0.1:29201' }))
      .toEqual(['ELASTICSEARCH_URL: not an http(s) URL: 127.0.0.1:29201']);
    expect(issuesOf(WithElasticsearch, { ELASTICSEARCH_URL: 'redis://127.0.0.1:1' })).toEqual(['ELASTICSEARCH_URL: not an http(s) URL: redis://127.0.0.1:1']);
  });

  it('refuses a value that names no node', () => {
    expect(issuesOf(WithElasticsearch, { ELASTICSEARCH_URL: ' , ' })).toEqual(['ELASTICSEARCH_URL: names no node URL']);
    expect(issuesOf(WithElasticsearch, {})).toHaveLength(1);
  });
});

describe('REDIS_SENTINELS', () => {
  it('parses each host:port', () => {
    expect(WithRedis.parse({ REDIS_SENTINELS: '127.0.0.1:26479, sentinel-b:26480', REDIS_SENTINEL_NAME: 'gm-primary' }).REDIS_SENTINELS)
      .toEqual([{ host: '127.0.0.1', port: 26479 }, { host: 'sentinel-b', port: 26480 }]);
  });

  it('names the entry that is not a host:port', () => {
    expect(issuesOf(WithRedis, { REDIS_SENTINELS: '127.0.0.1:26479,127.0.0.1', REDIS_SENTINEL_NAME: 'gm-primary' }))
      .toEqual(['REDIS_SENTINELS: not a host:port: 127.0.0.1']);
    expect(issuesOf(WithRedis, { REDIS_SENTINELS: '127.0.0.1:70000', REDIS_SENTINEL_NAME: 'gm-primary' }))
      .toEqual(['REDIS_SENTINELS: not a host:port: 127.0.0.1:70000']);
    expect(issuesOf(WithRedis, { REDIS_SENTINELS: ',', REDIS_SENTINEL_NAME: 'gm-primary' })).toEqual(['REDIS_SENTINELS: names no `host:port`']);
  });
});

describe('the Redis connection: one server or Sentinels', () => {
  it('is the URL when only REDIS_URL is set', () => {
    expect(redisConnectionOf(WithRedis.parse({ REDIS_URL: 'redis://127.0.0.1:16379' }))).toEqual({ kind: 'url', url: 'redis://127.0.0.1:16379' });
  });

  it('is the Sentinels and the master name when both are set', () => {
    expect(redisConnectionOf(WithRedis.parse({ REDIS_SENTINELS: '127.0.0.1:26479', REDIS_SENTINEL_NAME: 'gm-primary' })))
      .toEqual({ kind: 'sentinel', sentinels: [{ host: '127.0.0.1', port: 26479 }], name: 'gm-primary' });
  });

  it.each([
    [{}, 'REDIS_URL', 'required'],
    [{ REDIS_URL: 'redis://127.0.0.1:16379', REDIS_SENTINELS: '127.0.0.1:26479', REDIS_SENTINEL_NAME: 'gm-primary' }, 'REDIS_URL', 'not both'],
    [{ REDIS_SENTINELS: '127.0.0.1:26479' }, 'REDIS_SENTINEL_NAME', 'required with REDIS_SENTINELS'],
    [{ REDIS_URL: 'redis://127.0.0.1:16379', REDIS_SENTINEL_NAME: 'gm-primary' }, 'REDIS_SENTINEL_NAME', 'only read with REDIS_SENTINELS'],
  ])('refuses %j, naming %s', (env, variable, words) => {
    const problems = redisEnvProblems(WithRedis.parse(env));
    expect(problems.map((p) => p.variable)).toEqual([variable]);
    expect(problems[0]?.message).toContain(words);
    expect(() => redisConnectionOf(WithRedis.parse(env))).toThrow(EnvConfigError);
    expect(() => redisConnectionOf(WithRedis.parse(env))).toThrow(`${variable}: `);
  });
});
