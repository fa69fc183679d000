import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '@gm/distributed';
import { apiClient, capabilityIssuer, eventually, memory } from '../e2e/harness.ts';
import { CONTENT_PROBE, expectOneWriteTrace, type SpanView } from '../e2e/trace-assertions.ts';
import { launchBrowser } from '../console/browser.ts';
import { waterfallHtml, type JaegerTrace } from './trace-waterfall.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** Where the spec leaves the trace's picture (docs/images/traces/ holds the committed one). */
const SCREENSHOTS = path.join(ROOT, 'test-results/traces');

/** A free loopback port (the receiver's ports are picked here: several runs may share a machine). */
const freePort = () => new Promise<number>((resolve, reject) => {
  const server = createServer();
  server.once('error', reject);
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as { port: number };
    server.close(() => resolve(port));
  });
});

const viewsOf = (trace: JaegerTrace): SpanView[] => trace.spans.map((s) => ({
  name: s.operationName,
  service: trace.processes[s.processID]?.serviceName,
  traceId: s.traceID,
  spanId: s.spanID,
  parentId: s.references.find((r) => r.refType === 'CHILD_OF')?.spanID,
  attributes: Object.fromEntries(s.tags.map((t) => [t.key, t.value])),
}));

/**
 * Traces on the distributed runtime (docs/operations.md#traces): nine processes export OTLP to a
 * real receiver, Jaeger v2 (built by infra/local/ops-tools.sh), and its query API shows one
 * write as one trace across the processes, and a deletion job's fan-out to its targets.
 */
describe('traces across the services (distributed, Jaeger as the OTLP receiver)', () => {
  let jaeger: ChildProcess;
  let queryUrl: string;
  let stack: Stack;
  let dataDir: string;
  const jaegerLog: string[] = [];

  beforeAll(async () => {
    execFileSync('bash', [path.join(ROOT, 'infra/local/ops-tools.sh'), 'install'], { stdio: ['ignore', 'inherit', 'inherit'] });
    const tools = execFileSync('bash', [path.join(ROOT, 'infra/local/ops-tools.sh'), 'path'], { encoding: 'utf8' }).trim();
    const [query, grpc, health, otlp] = [await freePort(), await freePort(), await freePort(), await freePort()];
    jaeger = spawn(path.join(tools, 'bin/jaeger'), ['--config', `file:${path.join(ROOT, 'test/distributed/jaeger.yaml')}`], {
      env: { ...process.env, GM_JAEGER_QUERY_PORT: String(query), GM_JAEGER_GRPC_PORT: String(grpc), GM_JAEGER_HEALTH_PORT: String(health), GM_OTLP_PORT: String(otlp) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    jaeger.stderr?.on('data', (c: Buffer) => jaegerLog.push(c.toString()));
    queryUrl = `http://127.0.0.1:${query}`;
    await eventually('Jaeger healthy', async () => (await fetch(`http://127.0.0.1:${health}/status`).catch(() => undefined))?.status === 200, 60_000);
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-dist-trace-'));
    stack = await startStack({
      dataDir, port: 0, namespace: `trace-${randomUUID().slice(0, 8)}`,
      env: {
        MEMORY_PARTITIONS: '4', MEMORY_RATE_LIMIT_PER_MINUTE: '100000',
        // The standard variables only: OTLP over HTTP to the receiver, exported every 200 ms.
        OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${otlp}`, OTEL_BSP_SCHEDULE_DELAY: '200',
      },
    });
  }, 600_000);
  afterAll(async () => {
    await stack?.stop();
    jaeger?.kill('SIGTERM');
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  const issue = (actions?: Parameters<ReturnType<typeof capabilityIssuer>>[0]['actions'], scopes?: Parameters<ReturnType<typeof capabilityIssuer>>[0]['scopes']) =>
    capabilityIssuer(apiClient(() => stack.url), () => readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim())({
      agentId: 'trace-bot', ...(actions ? { actions } : {}), ...(scopes ? { scopes } : {}),
    });

  /** The traces Jaeger holds of a service that have a span named `operation`. */
  async function tracesWith(service: string, operation: string): Promise<JaegerTrace[]> {
    const res = await fetch(`${queryUrl}/api/traces?service=${service}&operation=${encodeURIComponent(operation)}&limit=50&lookback=1h`);
    if (res.status !== 200) return [];
    return ((await res.json()) as { data: JaegerTrace[] | null }).data ?? [];
  }

  it('shows one synchronous write as one trace, from the API request through write-admission to every group that folds it, in their own processes', async () => {
    const writer = await issue();
    const res = await fetch(`${stack.url}/v1/memories`, {
      method: 'POST', headers: { authorization: `Bearer ${writer}`, 'content-type': 'application/json' },
      body: JSON.stringify(memory({ id: 'traced-dist-1', subjectId: 'subj-traced', content: CONTENT_PROBE })),
    });
    expect(res.status).toBe(201);
    const groups = (trace: JaegerTrace) => new Set(trace.spans.flatMap((s) => s.tags.filter((t) => t.key === 'messaging.consumer.group.name').map((t) => String(t.value))));
    let found: JaegerTrace | undefined;
    await expect.poll(async () => {
      found = (await tracesWith('retrieval-broker', 'send memory.commands')).find((t) => {
        const g = groups(t);
        return ['write-admission', 'projector', 'index-builder', 'summary-builder', 'vector-indexer'].every((x) => g.has(x));
      });
      return found !== undefined;
    }, { timeout: 60_000, interval: 500 }).toBe(true);
    const spans = expectOneWriteTrace(viewsOf(found!));
    // Each hop in the process of its service.
    const serviceOf = (group: string) => spans.find((s) => s.attributes['messaging.consumer.group.name'] === group)?.service;
    expect(serviceOf('write-admission')).toBe('write-admission');
    expect(serviceOf('projector')).toBe('projector');
    expect(serviceOf('index-builder')).toBe('index-builder');
    expect(serviceOf('summary-builder')).toBe('index-builder');
    expect(serviceOf('vector-indexer')).toBe('vector-indexer');
    // The broker's HTTP server span, named by its route, is the send's parent: the trace starts at the request.
    const send = spans.find((s) => s.name === 'send memory.commands')!;
    const request = spans.find((s) => s.spanId === send.parentId);
    expect(request?.name).toBe('POST /v1/memories');
    expect(request?.service).toBe('retrieval-broker');
    expect(request?.attributes['http.route']).toBe('/v1/memories');
    expect(request?.attributes['gen_ai.operation.name']).toBe('upsert_memory');
    // Ids and decisions only: no token either.
    for (const span of spans) expect(JSON.stringify(span.attributes), span.name).not.toContain(writer.slice(-24));
    // A query string is redacted: a careless client's, or one that names what it looks for.
    const read = await fetch(`${stack.url}/v1/memories/traced-dist-1?note=Quillfeather`, { headers: { authorization: `Bearer ${writer}` } });
    expect(read.status).toBeLessThan(500);
    let readSpan: SpanView | undefined;
    await eventually('the read traced', async () => {
      readSpan = (await tracesWith('retrieval-broker', 'GET /v1/memories/:id')).flatMap(viewsOf).find((s) => s.name === 'GET /v1/memories/:id');
      return readSpan !== undefined;
    }, 60_000, 500);
    expect(readSpan?.attributes['url.query']).toBe('REDACTED');
    expect(JSON.stringify(readSpan?.attributes)).not.toContain('Quillfeather');
    // The trace as a page, in Chromium: the picture in docs/operations.md#traces comes from here.
    const browser = await launchBrowser();
    try {
      const page = await browser.newPage();
      await page.setViewport({ width: 1240, height: 400 });
      await page.setContent(waterfallHtml(found!, 'One synchronous write (POST /v1/memories) on the distributed runtime'));
      mkdirSync(SCREENSHOTS, { recursive: true });
      await page.screenshot({ path: path.join(SCREENSHOTS, 'write-trace.png'), fullPage: true });
      expect(await page.$$eval('tr', (rows) => rows.length)).toBe(found!.spans.length);
    } finally {
      await browser.close();
    }
  }, 120_000);

  it("shows a deletion job's fan-out: the tasks to every target and their acks in the request's trace", async () => {
    const writer = await issue();
    await fetch(`${stack.url}/v1/memories`, {
      method: 'POST', headers: { authorization: `Bearer ${writer}`, 'content-type': 'application/json' },
      body: JSON.stringify(memory({ id: 'traced-dist-2', subjectId: 'subj-traced-2', content: 'A second note' })),
    });
    const admin = await issue(['admin', 'request_delete', 'read'], [{ kind: 'project', id: 'maple' }, { kind: 'tenant', id: 'acme' }]);
    const deleted = await fetch(`${stack.url}/v1/memories/traced-dist-2`, { method: 'DELETE', headers: { authorization: `Bearer ${admin}` } });
    expect(deleted.status).toBe(202);
    const targets = ['projector.deletion', 'index-builder.deletion', 'vector-indexer.deletion', 'retrieval-broker.deletion', 'receipt-verifier'];
    await expect.poll(async () => {
      const traces = await tracesWith('retrieval-broker', 'DELETE /v1/memories/:id');
      return traces.some((t) => {
        if (viewsOf(t).find((s) => s.name === 'DELETE /v1/memories/:id')?.attributes['gen_ai.operation.name'] !== 'delete_memory') return false;
        const spans = viewsOf(t);
        const tasks = spans.filter((s) => s.name === 'process deletion.tasks').map((s) => String(s.attributes['messaging.consumer.group.name']));
        const acks = spans.filter((s) => s.name === 'process deletion.acks' && s.attributes['messaging.consumer.group.name'] === 'deletion-orchestrator');
        return targets.every((g) => tasks.includes(g)) && acks.length > 0;
      });
    }, { timeout: 60_000, interval: 500 }).toBe(true);
  }, 120_000);
});
