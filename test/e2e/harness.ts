import { expect } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { filesUnder } from './files.ts';
import type { Action, IssueCapabilityRequest, Role } from '@gm/contracts';
import type { Bus } from '@gm/bus';
import { eventually } from '@gm/testing/eventually';
import { ManualClock } from '@gm/testing/manual-clock';
import { createSqliteKeyStore, openContentCrypto } from '@gm/crypto';
import {
  KEY_STORE_FILE_NAME, MASTER_KEY_FILE_NAME, loadConfig, loadOrCreateMasterKeys, masterKeyEnvOf, replayDataDir, startEmbeddedRuntime,
  type EmbeddedRuntime,
} from '@gm/embedded';
import type { SearchIndex, VectorIndex } from '@gm/search-index';
import type { StateStore } from '@gm/state-store';

export { eventually };

/** A clock the test moves by hand; the runtime reads every "now" from it. */
export class TestClock extends ManualClock {
  constructor(ms = Date.parse('2026-11-30T08:00:00.000Z')) {
    super(ms);
  }
}

/** The fields tests read from our JSON answers (problem, mutation, packet, record, job). */
export interface ApiBody {
  [key: string]: unknown;
  id?: string;
  version?: number;
  status?: string | number;
  code?: string;
  detail?: string;
  requestId?: string;
  jobId?: string;
  packetId?: string;
  valid?: boolean;
  trust?: string;
  content?: string;
  recordIds?: string[];
  evidence?: Array<{ target: string; status: string; ref: string }>;
  items: Array<{ recordId: string; id?: string; version?: number; valid?: boolean; excerpt: string; rank: { score: number } }>;
}

export interface ApiResponse<T = ApiBody> {
  status: number;
  body: T;
  text: string;
  contentType: string | null;
  headers: Headers;
}

/** Collects the runtime's log lines so tests can assert on what is (not) logged. */
export class LogSink extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    done();
  }
}

/** What every e2e suite needs from a running runtime, embedded or distributed. */
export interface TestRuntime {
  readonly kind: 'embedded' | 'distributed';
  readonly url: string;
  /** The runtime's own state and index (the distributed one's Redis keys and ES indices). */
  readonly state: StateStore;
  readonly index: SearchIndex;
  /** The runtime's vector index (embedded: vectors.db; distributed: the namespace's Elasticsearch vector index). */
  readonly vectors: VectorIndex;
  /** Every log line the runtime wrote, for asserting what is never logged. */
  readonly logs: { readonly lines: string[] };
  /** The runtime's "now", epoch ms. */
  now(): number;
  /** Moves the runtime's time forward: the embedded clock jumps; the distributed stack waits it out. */
  advance(ms: number): Promise<void>;
  api<T = ApiBody>(method: string, route: string, options?: ApiOptions): Promise<ApiResponse<T>>;
  issue(request: Partial<IssueCapabilityRequest> & { agentId: string }, options?: { grants?: boolean }): Promise<string>;
  /** The deployment's issuer credential (tests mint consistency tokens of this deployment with it). */
  issuerCredential(): string;
  digest(): Promise<Digest>;
  /** Stops every part and starts it again on the same data. */
  restart(): Promise<void>;
  /** Stops and starts again with these settings on top (master keys): rejects when the start fails. */
  restartWith(env: Record<string, string>): Promise<void>;
  /**
   * Rebuilds the record projections and the index from the log alone (stopped), starts again,
   * and reports the digests from before and after.
   */
  replay(): Promise<{ before: Digest; after: Digest }>;
  /** Every byte the log holds (the embedded SQLite files; the Kafka segments of the namespace) as latin1 text. */
  rawLog(): Promise<string>;
  /**
   * Every file the stores beside the log keep, for raw scans: the embedded data directory; the
   * distributed runtime's Redis AOF and RDB files and its Elasticsearch shards (this machine's engines).
   */
  storeFiles(): Promise<string[]>;
  /**
   * A fresh reader of the log holding the master keys and the key store, with nothing cached:
   * what any service could still decrypt. Destroyed keys read as ERASED_CONTENT.
   */
  logReader(): Promise<{ log: Bus; close(): Promise<void> }>;
  /** The master key file the runtime uses now (JSON {active, keys}). */
  masterKeyFile(): string;
  /** The receipt signing key file (JSON {privateJwk, publicJwk, retired?}): embedded, in the data directory; distributed, the receipt-verifier's. */
  receiptKeyFile(): string;
  close(): Promise<void>;
}

export type Digest = { projection: string; index: string };

/** Timeout for a test that starts or restarts a runtime: seven processes take a while. */
export const STARTUP_MS = 180_000;

/** One query the query audit logged (MEMORY_QUERY_AUDIT=on; services/retrieval-broker/src/query-audit.ts), and its log line. */
export interface AuditedQuery {
  leg: 'keyword' | 'vector';
  requestId?: string;
  principalId?: string;
  purpose?: string;
  partitions: string[];
  /** The read path's time of the query (the runtime's clock). */
  now: string;
  /** Its line's position in the runtime's log. */
  line: number;
}

/** Every index query the audit logged in these lines, from `from` on (the distributed stack's lines carry a `[service] ` prefix). */
export function auditedQueries(lines: readonly string[], from = 0): AuditedQuery[] {
  return lines.flatMap((line, at) =>
    at >= from && line.includes('"audit":"index-query"') ? [{ ...(JSON.parse(line.slice(line.indexOf('{'))) as Omit<AuditedQuery, 'line'>), line: at }] : []);
}

/**
 * Starts a fresh runtime; env entries override the runtime's configuration. (What the indexes
 * are asked is seen through the query audit, MEMORY_QUERY_AUDIT, on both runtimes alike.)
 */
export type StartRuntime = (env?: Record<string, string>) => Promise<TestRuntime>;

export interface ApiOptions {
  token?: string;
  body?: unknown;
  /** The body as sent: text, or bytes (to send what no string can hold, such as invalid UTF-8). */
  raw?: string | Uint8Array;
  headers?: Record<string, string>;
  /** `manual` answers a redirect itself instead of following it (fetch's default). */
  redirect?: 'follow' | 'manual' | 'error';
}

/** A JSON-over-HTTP client for the API at `baseUrl()` (read per call: a restart may move it). */
export function apiClient(baseUrl: () => string): TestRuntime['api'] {
  return async (method, route, options = {}) => {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let payload: string | Uint8Array | undefined = options.raw;
    if (options.body !== undefined) payload = JSON.stringify(options.body);
    if (payload !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
    const response = await fetch(`${baseUrl()}${route}`, {
      method, headers, ...(payload === undefined ? {} : { body: payload }), ...(options.redirect ? { redirect: options.redirect } : {}),
    });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = text === '' ? null : JSON.parse(text);
    } catch {
      // not JSON (metrics)
    }
    return { status: response.status, body: body as never, text, contentType: response.headers.get('content-type'), headers: response.headers };
  };
}

/**
 * Issues a capability through the API with the issuer credential; tenant acme, project maple
 * and purpose support by default. Unless `grants: false`, it first grants the principal the
 * roles its actions need on every scope (member, reviewer, admin) — capabilities carry no
 * rights of their own since the Cedar PDP (§6.2); the governance suite grants by hand.
 */
export function capabilityIssuer(api: TestRuntime['api'], issuerCredential: () => string): TestRuntime['issue'] {
  const post = async (body: IssueCapabilityRequest) => {
    const response = await api('POST', '/v1/capabilities', { token: issuerCredential(), body });
    if (response.status !== 201) throw new Error(`issue failed: ${response.status} ${response.text}`);
    return String(response.body.token);
  };
  const granted = new Set<string>();
  const HARNESS_ADMIN = { id: 'harness-admin', kind: 'service' as const };
  const adminCapability = (tenant: string, scopes: IssueCapabilityRequest['scopes'], purpose: string) =>
    post({ tenant, agentId: 'harness-admin', principal: HARNESS_ADMIN, scopes, purpose, actions: ['admin'] });
  /** Per tenant and resource: the purposes harness-admin's own admin grant covers. */
  const administered = new Map<string, string[]>();
  /**
   * Admin routes are decided by Cedar: harness-admin holds an admin grant on every resource it
   * grants on. The first one of a resource is the bootstrap (the issuer vouches for it); a new
   * purpose is another admin grant, added with a capability of a purpose it already holds
   * (grants are never rewritten).
   */
  const administer = async (tenant: string, resource: IssueCapabilityRequest['scopes'][number], purpose: string) => {
    const key = `${tenant}/${resource.kind}:${resource.id}`;
    const purposes = administered.get(key) ?? [];
    if (purposes.includes(purpose)) return;
    const token = await adminCapability(tenant, [resource], purposes[0] ?? purpose);
    const body = { principal: HARNESS_ADMIN, resource, role: 'admin', purposes: [purpose] };
    const response = await api('POST', '/v1/grants', { token, body });
    if (response.status !== 201) throw new Error(`harness-admin grant failed: ${response.status} ${response.text}`);
    administered.set(key, [...purposes, purpose]);
  };
  const grantRoles = async (request: IssueCapabilityRequest) => {
    const principal = request.principal ?? { id: request.agentId, kind: 'agent' as const };
    const rolesOn = (scope: IssueCapabilityRequest['scopes'][number]) =>
      (scope.kind === 'tenant' ? TENANT_ROLE_ACTIONS : ROLE_ACTIONS).filter(([, actions]) => actions.some((a) => request.actions.includes(a))).map(([role]) => role);
    const wanted = request.scopes.flatMap((resource) => rolesOn(resource).map((role) => ({ resource, role })))
      .map((g) => ({ ...g, key: JSON.stringify([request.tenant, principal.kind, principal.id, g.resource.kind, g.resource.id, g.role, request.purpose]) }))
      .filter((g) => !granted.has(g.key));
    if (wanted.length === 0) return;
    for (const resource of request.scopes) await administer(request.tenant, resource, request.purpose);
    const admin = await adminCapability(request.tenant, request.scopes, request.purpose);
    for (const g of wanted) {
      const body = { principal, resource: g.resource, role: g.role, purposes: [request.purpose] };
      const response = await api('POST', '/v1/grants', { token: admin, body });
      if (response.status !== 201) throw new Error(`grant failed: ${response.status} ${response.text}`);
      granted.add(g.key);
    }
  };
  return async (request, options = {}) => {
    const body: IssueCapabilityRequest = {
      tenant: 'acme',
      scopes: [{ kind: 'project', id: 'maple' }],
      purpose: 'support',
      actions: ['search', 'read', 'cite', 'write', 'request_delete'],
      ...request,
    };
    if (options.grants !== false) await grantRoles(body);
    return post(body);
  };
}

/** Which role a capability's actions need (see packages/contracts/src/policy.ts). */
const ROLE_ACTIONS: ReadonlyArray<readonly [Role, readonly Action[]]> = [
  ['member', ['search', 'read', 'cite', 'write', 'request_delete']],
  ['reviewer', ['review', 'promote']],
  ['admin', ['admin', 'revoke']],
];

/** On the tenant (a `{kind: 'tenant'}` scope): tenant-wide administration, and forgetting across resources (§6.2 rule 12). */
const TENANT_ROLE_ACTIONS: ReadonlyArray<readonly [Role, readonly Action[]]> = [
  ['admin', ['admin']],
  ['privacy_officer', ['request_delete']],
];

/** The embedded runtime under test, with its clock and internals at hand. */
export interface EmbeddedTestRuntime extends TestRuntime {
  readonly runtime: EmbeddedRuntime;
  readonly dataDir: string;
  readonly clock: TestClock;
  readonly logs: LogSink;
}

export async function startTestRuntime(
  env: Record<string, string> = {}, existing?: { dataDir: string; clock: TestClock },
): Promise<EmbeddedTestRuntime> {
  const dataDir = existing?.dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'gm-e2e-'));
  const clock = existing?.clock ?? new TestClock();
  const logs = new LogSink();
  const baseEnv = {
    MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'info', MEMORY_EXPIRY_TICK: '50ms',
    MEMORY_DELETION_VERIFY_RETRY: '50ms', ...env,
  };
  let config = loadConfig(baseEnv);
  const runtimeOptions = { clock, logDestination: logs };
  let runtime = await startEmbeddedRuntime(config, runtimeOptions);
  const api = apiClient(() => runtime.url);

  return {
    kind: 'embedded',
    get runtime() {
      return runtime;
    },
    get url() {
      return runtime.url;
    },
    get state() {
      return runtime.state;
    },
    get index() {
      return runtime.index;
    },
    get vectors() {
      return runtime.vectors;
    },
    dataDir,
    clock,
    logs,
    now: () => clock.ms,
    advance: async (ms) => clock.advance(ms),
    api,
    issue: capabilityIssuer(api, () => runtime.credentials.issuerCredential),
    issuerCredential: () => runtime.credentials.issuerCredential,
    digest: async () => {
      const { projection, index } = await runtime.digest();
      return { projection, index };
    },
    async restart() {
      await runtime.close();
      runtime = await startEmbeddedRuntime(config, runtimeOptions);
    },
    async restartWith(overrides) {
      await runtime.close();
      config = loadConfig({ ...baseEnv, ...overrides });
      runtime = await startEmbeddedRuntime(config, runtimeOptions);
    },
    async replay() {
      await runtime.close();
      const report = await replayDataDir(dataDir, config.partitions, undefined, clock, masterKeyEnvOf(config));
      runtime = await startEmbeddedRuntime(config, runtimeOptions);
      return {
        before: { projection: report.before.projection, index: report.before.index },
        after: { projection: report.after.projection, index: report.after.index },
      };
    },
    rawLog: async () =>
      ['bus.db', 'bus.db-wal', 'bus.db-shm']
        .map((name) => path.join(dataDir, name))
        .filter((file) => existsSync(file))
        .map((file) => readFileSync(file).toString('latin1'))
        .join('\n'),
    storeFiles: async () => filesUnder(dataDir),
    async logReader() {
      const store = createSqliteKeyStore({ file: path.join(dataDir, KEY_STORE_FILE_NAME) });
      const crypto = await openContentCrypto({ masterKeys: loadOrCreateMasterKeys(dataDir, masterKeyEnvOf(config), true).masterKeys, store });
      return { log: crypto.view(runtime.bus, 'open'), close: async () => { crypto.close(); await store.close(); } };
    },
    masterKeyFile: () => config.masterKeyFile ?? path.join(dataDir, 'keys', MASTER_KEY_FILE_NAME),
    receiptKeyFile: () => runtime.credentials.receiptKeyFile,
    async close() {
      await runtime.close();
      if (!existing) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export const provenance = (observedAt = '2026-11-30T07:00:00.000Z') => [{ source: 'user' as const, observedAt }];

/**
 * Asserts the key target's evidence: `base` plus what the key store still holds of the destroyed
 * keys — nothing on the embedded SQLite store (after at least one WAL checkpoint per key, more
 * when a reader was in the way), the old records until compaction on Kafka's memory.keys.
 */
export function expectKeyEvidence(rt: Pick<TestRuntime, 'kind'>, ref: string | undefined, base: string, keys: number): void {
  // Then what is physically true of every other copy (design §8.4): erased from every SQLite file
  // on the embedded runtime; from Redis's rewritten files; in Elasticsearch expunged or pending a merge.
  const [keyRef, copies] = (ref ?? '').split(';copies=');
  const states = new Map((copies ?? '').split(',').map((c) => c.split(':') as [string, string]));
  if (rt.kind === 'distributed') {
    expect(keyRef).toBe(`${base};key_residue=until_compaction`);
    expect(states.get('state')).toBe('erased');
    expect(['erased', 'pending_compaction']).toContain(states.get('index'));
    return;
  }
  expect([...states.values()].every((s) => s === 'erased'), `copies ${copies}`).toBe(true);
  expect([...states.keys()]).toEqual(expect.arrayContaining(['state', 'index', 'summaries']));
  const checkpoints = /^(.*);key_residue=none;wal_checkpoints=(\d+)$/.exec(keyRef ?? '');
  expect(checkpoints?.[1], `key evidence ${ref}`).toBe(base);
  expect(Number(checkpoints?.[2])).toBeGreaterThanOrEqual(keys);
}

export function memory(overrides: Record<string, unknown> = {}) {
  return {
    subjectId: 'cust-42',
    resource: { kind: 'project', id: 'maple' },
    kind: 'fact',
    trust: 'trusted',
    content: 'Customer 42 prefers email over phone calls',
    provenance: provenance(),
    ...overrides,
  };
}

