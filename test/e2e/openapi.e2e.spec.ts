import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRuntime, STARTUP_MS, type ApiOptions, type EmbeddedTestRuntime } from './harness.ts';

/**
 * The OpenAPI document against the running embedded runtime: it names every route the server
 * registered and no other, and each operation, called with bad input, answers only statuses
 * (and problem codes) the document declares for it — the in-repo guard for what an external
 * fuzzer (Schemathesis) checks.
 */

interface ProblemSchema { allOf?: Array<{ properties?: { code?: { enum?: string[] } } }> }
interface DocResponse { content?: Record<string, { schema?: ProblemSchema; examples?: Record<string, { value: unknown }> }> }
interface DocOperation {
  operationId: string;
  security: Array<Record<string, unknown>>;
  parameters?: Array<{ name: string; in: string }>;
  requestBody?: { content: Record<string, { examples?: Record<string, { value: unknown }> }> };
  responses: Record<string, DocResponse>;
}
interface Document { paths: Record<string, Record<string, DocOperation>> }

/** The routes Fastify registered, from its route tree (`METHOD /path/{param}`); HEAD comes with every GET. */
function registeredRoutes(app: EmbeddedTestRuntime['runtime']['app']): string[] {
  const stack: string[] = [];
  const routes: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n').filter((l) => l.trim() !== '')) {
    const m = /^([│├└─ ]*?)([^│├└─ ]\S*)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) throw new Error(`unexpected printRoutes line: ${line}`);
    const depth = (m[1] ?? '').length / 4 - 1;
    stack.length = depth;
    const fullPath = `${stack.join('')}${m[2] ?? ''}`;
    stack.push(m[2] ?? '');
    for (const method of (m[3] ?? '').split(', ').filter(Boolean)) {
      // A parameter follows a slash; a colon anywhere else is literal (`/v1/memories:batch`).
      routes.push(`${method} ${fullPath.replace(/\/:([A-Za-z]+)/g, '/{$1}')}`);
    }
  }
  return routes;
}

const ALL_ACTIONS = ['search', 'read', 'cite', 'write', 'promote', 'review', 'request_delete', 'revoke', 'admin'] as const;

describe('the OpenAPI document and the running server', () => {
  let rt: EmbeddedTestRuntime;
  let doc: Document;
  let strong: string;
  let weak: string;

  beforeAll(async () => {
    rt = await startTestRuntime();
    strong = await rt.issue({ agentId: 'fuzz-bot', principal: { id: 'fuzz', kind: 'person' }, actions: [...ALL_ACTIONS] });
    weak = await rt.issue({ agentId: 'weak-bot', actions: ['cite'] });
    const res = await rt.api<Document>('GET', '/openapi.json');
    expect(res.status).toBe(200);
    doc = res.body;
  }, STARTUP_MS);
  afterAll(async () => rt.close(), STARTUP_MS);

  const operations = () => Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, op]) => ({ path, method: method.toUpperCase(), op })));

  it('names every route the server registered, and only those', () => {
    // The console's static files (routes/console.ts, docs/console.md) are a page, not API operations.
    const registered = registeredRoutes(rt.runtime.app).filter((r) => !/^(GET|HEAD) \/console\b/.test(r));
    const heads = registered.filter((r) => r.startsWith('HEAD '));
    const routes = registered.filter((r) => !r.startsWith('HEAD '));
    // Every HEAD is Fastify's twin of a GET (the document says so once, in its description).
    expect(heads.map((r) => r.replace(/^HEAD /, 'GET ')).filter((r) => !routes.includes(r))).toEqual([]);
    expect(routes.length).toBeGreaterThan(30);
    expect(new Set(operations().map(({ path, method }) => `${method} ${path}`))).toEqual(new Set(routes));
  });

  /** A call and the statuses (and codes) the document lets it answer. */
  const expectDeclared = async (label: string, op: DocOperation, method: string, url: string, options: ApiOptions) => {
    const res = await rt.api(method, url, { ...options, redirect: 'manual' });
    const declared = op.responses[String(res.status)];
    expect(declared, `${label}: ${method} ${url.slice(0, 80)} answered ${res.status}, which ${op.operationId} does not declare (${res.text.slice(0, 200)})`).toBeDefined();
    if (res.contentType?.includes('application/problem+json')) {
      const codes = declared?.content?.['application/problem+json']?.schema?.allOf?.[1]?.properties?.code?.enum ?? [];
      expect(codes, `${label}: ${op.operationId} ${res.status} carried ${String(res.body.code)}`).toContain(res.body.code);
      expect(res.body.status).toBe(res.status);
    }
    return res.status;
  };

  it('answers each operation, under bad input, only with the statuses and codes it declares', async () => {
    const seen = new Map<string, Set<number>>();
    for (const { path, method, op } of operations()) {
      const statuses = new Set<number>();
      seen.set(op.operationId, statuses);
      const issuer = op.security.some((s) => 'issuer' in s);
      const valid = issuer ? rt.issuerCredential() : strong;
      const example = Object.values(Object.values(op.requestBody?.content ?? {})[0]?.examples ?? {})[0]?.value ?? {};
      const body = method === 'GET' ? {} : { body: example };
      const withParams = (value: string) => path.replace(/\{[A-Za-z]+\}/g, value);
      const url = withParams('no-such-id-1');
      const call = async (label: string, target: string, options: ApiOptions) => {
        statuses.add(await expectDeclared(label, op, method, target, options));
      };

      await call('no token', url, body);
      await call('a bad token', url, { ...body, token: 'garbage' });
      await call(issuer ? 'a capability for the issuer credential' : 'a capability without the action', url, { ...body, token: weak });
      await call('a valid call', url, { ...body, token: valid });
      await call('headers over 16 KiB', url, { ...body, token: valid, headers: { 'x-padding': 'p'.repeat(20_000) } });
      if (method !== 'GET') {
        await call('malformed JSON', url, { token: valid, raw: '{"broken": ', headers: { 'content-type': 'application/json' } });
        await call('an empty JSON body', url, { token: valid, raw: '', headers: { 'content-type': 'application/json' } });
        await call('a wrong content type', url, { token: valid, raw: 'subjectId=x', headers: { 'content-type': 'text/plain' } });
        await call('an unknown field', url, { token: valid, body: { ...(typeof example === 'object' ? example : {}), sneaky: true } });
      }
      if (path.includes('{')) {
        await call('an id that is not one', withParams('not%20an%20id'), { ...body, token: valid });
        await call('an oversized id', withParams('i'.repeat(129)), { ...body, token: valid });
        await call('a very long id', withParams('i'.repeat(2_000)), { ...body, token: valid });
        await call('an undecodable id', withParams('%E0%A4%A'), { ...body, token: valid });
      }
      const headers = new Set((op.parameters ?? []).filter((p) => p.in === 'header').map((p) => p.name));
      if (headers.has('Consistency-Token')) await call('a bad Consistency-Token', url, { ...body, token: valid, headers: { 'consistency-token': 'ct1.forged.token' } });
      if (headers.has('Idempotency-Key')) await call('a bad Idempotency-Key', url, { ...body, token: valid, headers: { 'idempotency-key': 'no spaces allowed' } });
    }
    // The probes reached the handlers' own refusals, not only the edge's.
    expect(seen.get('getMemory')).toEqual(new Set([400, 401, 403, 404, 414, 431]));
    expect([...(seen.get('writeMemory') ?? [])]).toEqual(expect.arrayContaining([201, 400, 401, 403, 415, 422]));
    expect([...(seen.get('getSubjectSummary') ?? [])]).toEqual(expect.arrayContaining([200, 400, 401, 403, 414]));
    expect(seen.get('getSubjectSummary')).not.toContain(404);
  }, 120_000);

  it('serves the rendered document at /docs, needing no capability and nothing from outside', async () => {
    const redirect = await fetch(`${rt.url}/docs`, { redirect: 'manual' });
    expect([redirect.status, redirect.headers.get('location')]).toEqual([301, '/docs/']);
    const page = await rt.api('GET', '/docs');
    expect([page.status, page.contentType]).toEqual([200, expect.stringContaining('text/html')]);
    // Nothing absolute: every script, style and link the page names is on this server.
    expect(page.text).not.toMatch(/(?:https?:)?\/\/[a-z]/i);
    const assets = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] ?? '');
    expect(assets).toEqual(['js/scalar.js']);
    for (const asset of assets) {
      const res = await fetch(new URL(asset, `${rt.url}/docs/`));
      expect([res.status, res.headers.get('content-type')]).toEqual([200, expect.stringContaining('javascript')]);
      expect((await res.text()).length).toBeGreaterThan(1_000_000);
    }
    // The page renders /openapi.json and is told to fetch no fonts, send no telemetry, offer no hosted client.
    expect(page.text).toContain('"url": "/openapi.json"');
    for (const setting of ['"withDefaultFonts": false', '"telemetry": false', '"hideClientButton": true']) expect(page.text).toContain(setting);
  });
});

describe('a server shutting down', () => {
  it('answers a request that arrives while it closes 503 problem+json, retriable, as the document declares', async () => {
    const rt = await startTestRuntime();
    const socket = net.connect(Number(new URL(rt.url).port), new URL(rt.url).hostname);
    try {
      await new Promise((resolve) => socket.once('connect', resolve));
      let received = '';
      socket.on('data', (chunk) => { received += String(chunk); });
      // The first request is routed before the close starts (its headers are in); the second,
      // pipelined behind its body on the same connection, arrives while the server closes.
      // Node emits 'request' once it has parsed a request's headers: then the close may start.
      const routed = new Promise((resolve) => rt.runtime.app.server.once('request', resolve));
      socket.write('POST /v1/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n');
      await routed;
      const closing = rt.runtime.app.close();
      socket.write('{}GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
      await new Promise((resolve) => socket.once('close', resolve));
      await closing;
      const second = received.slice(received.indexOf('HTTP/1.1', 1));
      expect(second).toMatch(/^HTTP\/1\.1 503 /);
      expect(second.toLowerCase()).toContain('content-type: application/problem+json');
      expect(second.toLowerCase()).toContain('retry-after: 1');
      expect(second).toContain('"code":"MEM_UNAVAILABLE"');
    } finally {
      socket.destroy();
      await rt.close();
    }
  }, STARTUP_MS);
});
