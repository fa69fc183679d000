import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { Clock, IssueCapabilityRequest } from '@gm/contracts';
import { loadConfig, startEmbeddedRuntime, type EmbeddedRuntime } from '@gm/embedded';

/** A clock the test moves by hand; the runtime reads every "now" from it. */
export class TestClock implements Clock {
  constructor(public ms = Date.parse('2026-11-30T08:00:00.000Z')) {}
  now = (): Date => new Date(this.ms);
  advance(ms: number): void {
    this.ms += ms;
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
}

/** Collects the runtime's log lines so tests can assert on what is (not) logged. */
export class LogSink extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _enc: string, done: () => void): void {
    this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    done();
  }
}

export interface TestRuntime {
  runtime: EmbeddedRuntime;
  dataDir: string;
  clock: TestClock;
  logs: LogSink;
  api<T = ApiBody>(method: string, route: string, options?: { token?: string; body?: unknown; raw?: string; headers?: Record<string, string> }): Promise<ApiResponse<T>>;
  issue(request: Partial<IssueCapabilityRequest> & { agentId: string }): Promise<string>;
  restart(): Promise<void>;
  close(): Promise<void>;
}

export async function startTestRuntime(env: Record<string, string> = {}, existing?: { dataDir: string; clock: TestClock }): Promise<TestRuntime> {
  const dataDir = existing?.dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'gm-e2e-'));
  const clock = existing?.clock ?? new TestClock();
  const logs = new LogSink();
  const config = loadConfig({
    MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'info', MEMORY_EXPIRY_TICK: '50ms',
    MEMORY_DELETION_VERIFY_RETRY: '50ms', ...env,
  });
  let runtime = await startEmbeddedRuntime(config, { clock, logDestination: logs });

  const api: TestRuntime['api'] = async (method, route, options = {}) => {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    let payload: string | undefined = options.raw;
    if (options.body !== undefined) payload = JSON.stringify(options.body);
    if (payload !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
    const response = await fetch(`${runtime.url}${route}`, { method, headers, ...(payload === undefined ? {} : { body: payload }) });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = text === '' ? null : JSON.parse(text);
    } catch {
      // not JSON (metrics)
    }
    return { status: response.status, body: body as never, text, contentType: response.headers.get('content-type') };
  };

  const self: TestRuntime = {
    get runtime() {
      return runtime;
    },
    dataDir,
    clock,
    logs,
    api,
    async issue(request) {
      const body: IssueCapabilityRequest = {
        tenant: 'acme',
        scopes: [{ kind: 'project', id: 'maple' }],
        purpose: 'support',
        actions: ['search', 'read', 'cite', 'write', 'request_delete'],
        ...request,
      };
      const response = await api('POST', '/v1/capabilities', { token: runtime.credentials.issuerCredential, body });
      if (response.status !== 201) throw new Error(`issue failed: ${response.status} ${response.text}`);
      return String(response.body.token);
    },
    async restart() {
      await runtime.close();
      runtime = await startEmbeddedRuntime(config, { clock, logDestination: logs });
    },
    async close() {
      await runtime.close();
      if (!existing) rmSync(dataDir, { recursive: true, force: true });
    },
  };
  return self;
}

export const provenance = (observedAt = '2026-11-30T07:00:00.000Z') => [{ source: 'user' as const, observedAt }];

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

/** Polls a condition without fixed sleeps in the assertions; fails with `what` after `ms`. */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined | false>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
