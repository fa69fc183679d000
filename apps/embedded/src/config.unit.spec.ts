import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_TTL_POLICY } from '@gm/domain';
import { DEFAULT_MODEL_DIR } from '@gm/embedding';
import { ConfigError, loadConfig, parseDuration } from './config.ts';

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const CREDENTIAL = 'issuer-credential-0123456789abcdef-xyz';

/** The message of the ConfigError loadConfig throws for `env`; anything else fails loudly. */
const problemsWith = (env: NodeJS.ProcessEnv): string => {
  try {
    loadConfig(env);
  } catch (e) {
    if (e instanceof ConfigError) return e.message;
    return `not a ConfigError: ${String(e)}`;
  }
  return 'no error';
};

describe('loadConfig defaults', () => {
  const config = loadConfig({});

  it('listens on 127.0.0.1:8080', () => {
    expect(config.host).toBe('127.0.0.1');
    expect(config.port).toBe(8080);
  });

  it('resolves the data directory to an absolute path', () => {
    expect(path.isAbsolute(config.dataDir)).toBe(true);
    expect(config.dataDir).toBe(path.resolve('.data'));
  });

  it('takes every TTL from DEFAULT_TTL_POLICY', () => {
    expect(config.ttl).toEqual(DEFAULT_TTL_POLICY);
  });

  it('retrieves semantically, with the model where setup fetches it', () => {
    expect(config.semantic).toEqual({ modelDir: DEFAULT_MODEL_DIR });
  });

  it('has no issuer credential unless one is configured', () => {
    expect(config.issuerCredential).toBeUndefined();
    expect('issuerCredential' in config).toBe(false);
  });

  it('uses the documented defaults for everything else', () => {
    expect(config).toMatchObject({
      issuerName: 'governed-memory',
      logLevel: 'info',
      partitions: 4,
      rateLimitPerMinute: 1200,
      bodyLimitBytes: 256 * 1024,
      requestTimeoutMs: 30 * SECOND,
      replyTimeoutMs: 10 * SECOND,
      readYourWritesTimeoutMs: 5 * SECOND,
      packetTtlMs: 15 * MINUTE,
      cacheTtlMs: 60 * SECOND,
      idempotencyWindowMs: 24 * HOUR,
      admission: { snapshotIntervalMs: 5 * SECOND, maxEntries: 500_000 },
      expiryTickMs: SECOND,
      deletionDeadlineMs: 60 * SECOND,
      deletionVerifyRetryMs: 500,
      pipeline: 'thread',
      asyncBacklogLimit: 1_000,
      queryAudit: false,
      adminBootstrap: 'issuer',
      bootstrapAdmins: [],
    });
  });

  it('ignores variables that are not its own', () => {
    expect(loadConfig({ PATH: '/usr/bin', PORT: '1', HOST: '0.0.0.0' })).toEqual(config);
  });
});

describe('loadConfig overrides', () => {
  it('parses every MEMORY_* variable', () => {
    const config = loadConfig({
      MEMORY_HOST: '0.0.0.0',
      MEMORY_PORT: '9090',
      MEMORY_DATA_DIR: '/var/lib/governed-memory',
      MEMORY_ISSUER_CREDENTIAL: CREDENTIAL,
      MEMORY_ISSUER_NAME: 'acme-issuer',
      MEMORY_LOG_LEVEL: 'debug',
      MEMORY_LOG_FORMAT: 'json',
      MEMORY_PARTITIONS: '16',
      MEMORY_RATE_LIMIT_PER_MINUTE: '60',
      MEMORY_BODY_LIMIT_BYTES: '2048',
      MEMORY_REQUEST_TIMEOUT: '45s',
      MEMORY_REPLY_TIMEOUT: '2s',
      MEMORY_READ_YOUR_WRITES_TIMEOUT: '750ms',
      MEMORY_PACKET_TTL: '5m',
      MEMORY_CACHE_TTL: '10s',
      MEMORY_IDEMPOTENCY_WINDOW: '48h',
      MEMORY_ADMISSION_SNAPSHOT_INTERVAL: '2s',
      MEMORY_ADMISSION_MEMORY_ENTRIES: '20000',
      MEMORY_EXPIRY_TICK: '50ms',
      MEMORY_DELETION_DEADLINE: '2m',
      MEMORY_DELETION_VERIFY_RETRY: '100ms',
      MEMORY_TTL_WORKING_NOTE: '12h,2d',
      MEMORY_TTL_FACT: '30d,60d',
      MEMORY_TTL_SKILL: '1d,1d',
      MEMORY_TTL_PREFERENCE: '90m,3h',
      MEMORY_PIPELINE: 'inline',
      MEMORY_ASYNC_BACKLOG: '2500',
      MEMORY_QUERY_AUDIT: 'on',
      MEMORY_ADMIN_BOOTSTRAP: 'configured',
      MEMORY_BOOTSTRAP_ADMINS: '[{"tenant":"acme","principal":{"id":"root","kind":"person"},"resource":{"kind":"project","id":"maple"},"purposes":["support","audit"]}]',
      MEMORY_SEMANTIC: 'on',
      MEMORY_EMBEDDING_MODEL_DIR: '/opt/models/minilm',
    });
    expect(config).toEqual({
      host: '0.0.0.0',
      port: 9090,
      dataDir: '/var/lib/governed-memory',
      issuerCredential: CREDENTIAL,
      issuerName: 'acme-issuer',
      logLevel: 'debug',
      logFormat: 'json',
      partitions: 16,
      rateLimitPerMinute: 60,
      bodyLimitBytes: 2048,
      requestTimeoutMs: 45 * SECOND,
      replyTimeoutMs: 2 * SECOND,
      readYourWritesTimeoutMs: 750,
      packetTtlMs: 5 * MINUTE,
      cacheTtlMs: 10 * SECOND,
      idempotencyWindowMs: 48 * HOUR,
      admission: { snapshotIntervalMs: 2 * SECOND, maxEntries: 20_000 },
      expiryTickMs: 50,
      deletionDeadlineMs: 2 * MINUTE,
      deletionVerifyRetryMs: 100,
      ttl: {
        working_note: { defaultSeconds: 12 * 3600, maxSeconds: 2 * 86_400 },
        fact: { defaultSeconds: 30 * 86_400, maxSeconds: 60 * 86_400 },
        skill: { defaultSeconds: 86_400, maxSeconds: 86_400 },
        preference: { defaultSeconds: 90 * 60, maxSeconds: 3 * 3600 },
      },
      pipeline: 'inline',
      asyncBacklogLimit: 2500,
      queryAudit: true,
      adminBootstrap: 'configured',
      bootstrapAdmins: [{ tenant: 'acme', principal: { id: 'root', kind: 'person' }, resource: { kind: 'project', id: 'maple' }, purposes: ['support', 'audit'] }],
      semantic: { modelDir: '/opt/models/minilm' },
    });
  });

  it('keeps no vectors with MEMORY_SEMANTIC=off', () => {
    const config = loadConfig({ MEMORY_SEMANTIC: 'off', MEMORY_EMBEDDING_MODEL_DIR: '/opt/models/minilm' });
    expect('semantic' in config).toBe(false);
  });

  it('resolves a relative data directory against the working directory', () => {
    expect(loadConfig({ MEMORY_DATA_DIR: 'state/../store' }).dataDir).toBe(path.resolve('store'));
  });

  it('accepts port 0 (pick a free port) and 65535', () => {
    expect(loadConfig({ MEMORY_PORT: '0' }).port).toBe(0);
    expect(loadConfig({ MEMORY_PORT: '65535' }).port).toBe(65535);
  });

  it('accepts an issuer credential of exactly 32 characters', () => {
    expect(loadConfig({ MEMORY_ISSUER_CREDENTIAL: 'x'.repeat(32) }).issuerCredential).toBe('x'.repeat(32));
  });

  it.each(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])('accepts log level %s', (level) => {
    expect(loadConfig({ MEMORY_LOG_LEVEL: level }).logLevel).toBe(level);
  });

  it('changes one kind\'s TTL without touching the others', () => {
    const { ttl } = loadConfig({ MEMORY_TTL_FACT: '7d,14d' });
    expect(ttl.fact).toEqual({ defaultSeconds: 7 * 86_400, maxSeconds: 14 * 86_400 });
    expect(ttl.skill).toEqual(DEFAULT_TTL_POLICY.skill);
    expect(ttl.working_note).toEqual(DEFAULT_TTL_POLICY.working_note);
    expect(ttl.preference).toEqual(DEFAULT_TTL_POLICY.preference);
  });
});

describe('parseDuration', () => {
  it.each([
    ['250ms', 250],
    ['30s', 30 * SECOND],
    ['15m', 15 * MINUTE],
    ['24h', 24 * HOUR],
    ['90d', 90 * DAY],
    ['0s', 0],
    [' 30s ', 30 * SECOND],
  ])('reads %j as %i ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['soon', '', '30', 's', '-5s', '1.5h', '30 s', '30S', '15min', '2w', '1e3ms', '30s30s', 'ms'])('rejects %j', (text) => {
    expect(() => parseDuration(text)).toThrow(/not a duration/);
  });

  it('reads each duration variable with every unit', () => {
    const config = loadConfig({
      MEMORY_READ_YOUR_WRITES_TIMEOUT: '250ms',
      MEMORY_REQUEST_TIMEOUT: '30s',
      MEMORY_PACKET_TTL: '15m',
      MEMORY_IDEMPOTENCY_WINDOW: '24h',
      MEMORY_DELETION_DEADLINE: '90d',
    });
    expect(config.readYourWritesTimeoutMs).toBe(250);
    expect(config.requestTimeoutMs).toBe(30 * SECOND);
    expect(config.packetTtlMs).toBe(15 * MINUTE);
    expect(config.idempotencyWindowMs).toBe(24 * HOUR);
    expect(config.deletionDeadlineMs).toBe(90 * DAY);
  });
});

describe('loadConfig rejects invalid values with a ConfigError naming the variable', () => {
  it.each([
    ['a port that is not a number', 'MEMORY_PORT', 'http'],
    ['a port above 65535', 'MEMORY_PORT', '65536'],
    ['a negative port', 'MEMORY_PORT', '-1'],
    ['a fractional port', 'MEMORY_PORT', '80.5'],
    ['negative partitions', 'MEMORY_PARTITIONS', '-1'],
    ['zero partitions', 'MEMORY_PARTITIONS', '0'],
    ['too many partitions', 'MEMORY_PARTITIONS', '257'],
    ['a zero rate limit', 'MEMORY_RATE_LIMIT_PER_MINUTE', '0'],
    ['a body limit below 1 KiB', 'MEMORY_BODY_LIMIT_BYTES', '1023'],
    ['a duration "soon"', 'MEMORY_REQUEST_TIMEOUT', 'soon'],
    ['a duration without unit', 'MEMORY_CACHE_TTL', '60'],
    ['an empty duration', 'MEMORY_EXPIRY_TICK', ''],
    ['a TTL with default > max ("max,default")', 'MEMORY_TTL_FACT', '365d,90d'],
    ['a TTL with 3 parts', 'MEMORY_TTL_SKILL', '1d,2d,3d'],
    ['a TTL with one part', 'MEMORY_TTL_PREFERENCE', '30d'],
    ['a TTL with a zero default', 'MEMORY_TTL_WORKING_NOTE', '0d,7d'],
    ['a TTL with a bad duration', 'MEMORY_TTL_FACT', '90d,forever'],
    ['an issuer credential shorter than 32 characters', 'MEMORY_ISSUER_CREDENTIAL', 'x'.repeat(31)],
    ['an empty issuer credential', 'MEMORY_ISSUER_CREDENTIAL', ''],
    ['an unknown log level', 'MEMORY_LOG_LEVEL', 'verbose'],
    ['an upper-case log level', 'MEMORY_LOG_LEVEL', 'INFO'],
    ['an empty host', 'MEMORY_HOST', ''],
    ['an empty data directory', 'MEMORY_DATA_DIR', ''],
    ['a snapshot interval without unit', 'MEMORY_ADMISSION_SNAPSHOT_INTERVAL', '5'],
    ['a write-admission memory bound below 1,000 entries', 'MEMORY_ADMISSION_MEMORY_ENTRIES', '999'],
  ])('%s', (_name, variable, value) => {
    const message = problemsWith({ [variable]: value });
    expect(message).toMatch(/^invalid configuration:/);
    expect(message).toContain(`${variable}:`);
  });

  it('rejects an empty MEMORY_PORT instead of silently listening on a random port', () => {
    // `MEMORY_PORT=` in a .env file must not become port 0 through Number('') === 0.
    expect(problemsWith({ MEMORY_PORT: '' })).toContain('MEMORY_PORT:');
    expect(problemsWith({ MEMORY_PORT: '   ' })).toContain('MEMORY_PORT:');
  });

  it('never repeats the issuer credential in the error message', () => {
    const secret = 'too-short-but-secret-31-chars!!';
    expect(secret).toHaveLength(31);
    const message = problemsWith({ MEMORY_ISSUER_CREDENTIAL: secret });
    expect(message).toContain('MEMORY_ISSUER_CREDENTIAL:');
    expect(message).not.toContain(secret);
  });

  it('reports several problems at once in one message', () => {
    const message = problemsWith({
      MEMORY_PORT: '99999',
      MEMORY_PARTITIONS: '-3',
      MEMORY_REQUEST_TIMEOUT: 'soon',
      MEMORY_TTL_FACT: '365d,90d',
      MEMORY_TTL_SKILL: '1d,2d,3d',
      MEMORY_ISSUER_CREDENTIAL: 'short',
      MEMORY_LOG_LEVEL: 'loud',
      MEMORY_PIPELINE: 'process',
      MEMORY_SEMANTIC: 'maybe',
      MEMORY_HOST: '0.0.0.0',
    });
    const variables = [
      'MEMORY_PORT', 'MEMORY_PARTITIONS', 'MEMORY_REQUEST_TIMEOUT', 'MEMORY_TTL_FACT', 'MEMORY_TTL_SKILL',
      'MEMORY_ISSUER_CREDENTIAL', 'MEMORY_LOG_LEVEL', 'MEMORY_PIPELINE', 'MEMORY_SEMANTIC',
    ];
    for (const variable of variables) expect(message).toContain(`${variable}:`);
    expect(message).not.toContain('MEMORY_HOST');
    expect(message.split('\n').filter((line) => line.startsWith('  MEMORY_'))).toHaveLength(variables.length);
  });

  it('throws a ConfigError, which is an Error', () => {
    expect(() => loadConfig({ MEMORY_PORT: 'http' })).toThrow(ConfigError);
    expect(() => loadConfig({ MEMORY_PORT: 'http' })).toThrow(Error);
  });
});
