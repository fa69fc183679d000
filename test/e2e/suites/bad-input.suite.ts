import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memory, STARTUP_MS, type StartRuntime, type TestRuntime } from '../harness.ts';

/** Bad input gets a clear problem+json answer, writes nothing, and the service keeps serving. */
export const badInputSuite = (start: StartRuntime) => describe('bad input and hostile callers', () => {
  let rt: TestRuntime;
  let writer: string;

  beforeAll(async () => {
    rt = await start({ MEMORY_BODY_LIMIT_BYTES: String(128 * 1024) });
    writer = await rt.issue({ agentId: 'support-bot', principal: { id: 'alice', kind: 'person' } });
  }, STARTUP_MS);
  afterAll(async () => rt.close(), STARTUP_MS);

  const recordCount = async () => (await rt.state.records.all()).length;

  const cases: Array<[string, () => Promise<{ status: number; code: string | undefined }>, number, string]> = [
    ['malformed JSON', async () => post('{"subjectId": "x",'), 400, 'MEM_VALIDATION'],
    ['an unknown field', async () => post(JSON.stringify(memory({ sneaky: true }))), 422, 'MEM_VALIDATION'],
    ['content over 32 KiB', async () => post(JSON.stringify(memory({ content: 'x'.repeat(32 * 1024 + 1) }))), 422, 'MEM_VALIDATION'],
    ['content over 32 KiB in multi-byte characters', async () => post(JSON.stringify(memory({ content: 'é'.repeat(16 * 1024 + 1) }))), 422, 'MEM_VALIDATION'],
    ['a body over the request limit', async () => post(JSON.stringify(memory({ content: 'y'.repeat(200 * 1024) }))), 413, 'MEM_PAYLOAD_TOO_LARGE'],
    ['missing provenance', async () => post(JSON.stringify(memory({ provenance: undefined }))), 422, 'MEM_VALIDATION'],
    ['empty provenance', async () => post(JSON.stringify(memory({ provenance: [] }))), 422, 'MEM_VALIDATION'],
    ['an id with a slash', async () => post(JSON.stringify(memory({ id: 'a/b' }))), 422, 'MEM_VALIDATION'],
    ['an id over 128 characters', async () => post(JSON.stringify(memory({ id: 'i'.repeat(129) }))), 422, 'MEM_VALIDATION'],
    ['trust "verified" claimed by a writer', async () => post(JSON.stringify(memory({ trust: 'verified' }))), 422, 'MEM_VALIDATION'],
    ['another tenant in the body', async () => post(JSON.stringify(memory({ tenantId: 'globex' }))), 403, 'MEM_IMPERSONATION'],
    ['another agent in the body', async () => post(JSON.stringify(memory({ agentId: 'ceo-bot' }))), 403, 'MEM_IMPERSONATION'],
    ['another owner in the body', async () => post(JSON.stringify(memory({ owner: { principalId: 'mallory', kind: 'person' } }))), 403, 'MEM_IMPERSONATION'],
    ['a resource outside the capability', async () => post(JSON.stringify(memory({ resource: { kind: 'project', id: 'maplemark' } }))), 403, 'CAP_SCOPE_DENIED'],
    ['purposes without the writer\'s purpose', async () => post(JSON.stringify(memory({ purposes: ['security'] }))), 403, 'CAP_SCOPE_DENIED'],
    ['restricted visibility without a grant', async () => post(JSON.stringify(memory({ visibility: 'restricted' }))), 403, 'MEM_FORBIDDEN'],
    ['expiresAt in the past', async () => post(JSON.stringify(memory({ expiresAt: '2020-01-01T00:00:00Z' }))), 422, 'MEM_VALIDATION'],
    ['a non-JSON content type', async () => post('subjectId=x', { 'content-type': 'text/plain' }), 415, 'MEM_VALIDATION'],
    ['a bad Idempotency-Key', async () => post(JSON.stringify(memory()), { 'idempotency-key': 'no spaces allowed' }), 422, 'MEM_VALIDATION'],
    // Nothing reinterpreted (docs/api.md, bad input). The last "trust" would win in JSON.parse and store an active record.
    ['a duplicate key', async () => post(JSON.stringify(memory({ trust: 'untrusted' })).replace('"trust":"untrusted"', '"trust":"untrusted","trust":"trusted"')), 400, 'MEM_VALIDATION'],
    ['a duplicate key spelt with an escape', async () => post(JSON.stringify(memory()).replace('"kind":"fact"', '"kind":"fact","\\u006bind":"skill"')), 400, 'MEM_VALIDATION'],
    ['a __proto__ key', async () => post(JSON.stringify(memory()).replace('{', '{"__proto__":{"trust":"trusted"},')), 400, 'MEM_VALIDATION'],
    ['invalid UTF-8', async () => post(invalidUtf8()), 400, 'MEM_VALIDATION'],
    // Valid JSON, but no Unicode text: JSON.parse keeps the lone surrogate, and storing it would make it U+FFFD.
    ['an escaped lone surrogate', async () => post(JSON.stringify(memory({ content: 'x' })).replace('"content":"x"', '"content":"Caf\\ud800"')), 400, 'MEM_VALIDATION'],
    // A purpose puts the record in front of that purpose's readers: only one the writer holds a grant for there.
    ['a purpose the writer holds no grant for', async () => post(JSON.stringify(memory({ purposes: ['support', 'security'] }))), 422, 'MEM_VALIDATION'],
    ['a UTF-16 charset', async () => post(JSON.stringify(memory()), { 'content-type': 'application/json; charset=utf-16' }), 415, 'MEM_VALIDATION'],
    ['the id "."', async () => post(JSON.stringify(memory({ id: '.' }))), 422, 'MEM_VALIDATION'],
    ['the id ".."', async () => post(JSON.stringify(memory({ id: '..' }))), 422, 'MEM_VALIDATION'],
    // What a purged record keeps in place of its subject: no live record may be about it.
    ['the subject id ".erased"', async () => post(JSON.stringify(memory({ subjectId: '.erased' }))), 422, 'MEM_VALIDATION'],
  ];

  /** A write body whose "é" has a broken second byte (0xC3 0x28): JSON.parse would store U+FFFD in its place. */
  function invalidUtf8(): Uint8Array {
    const bytes = Buffer.from(JSON.stringify(memory({ content: 'Café au lait' })));
    bytes[bytes.indexOf(Buffer.from('é')) + 1] = 0x28;
    return bytes;
  }

  async function post(raw: string | Uint8Array, headers: Record<string, string> = {}) {
    const res = await rt.api('POST', '/v1/memories', { token: writer, raw, headers: { 'content-type': 'application/json', ...headers } });
    expect(res.contentType).toContain('application/problem+json');
    expect(typeof res.body.detail).toBe('string');
    return { status: res.status, code: res.body.code };
  }

  for (const [name, send, status, code] of cases) {
    it(`rejects ${name} with ${status} ${code} and writes nothing`, async () => {
      const before = await recordCount();
      expect(await send()).toEqual({ status, code });
      expect(await recordCount()).toBe(before);
      expect((await rt.api('GET', '/healthz')).status).toBe(200);
    });
  }

  it('refuses grant and delegation time bounds that could not be meant: notBefore after notAfter, a year out of range', async () => {
    const admin = await rt.issue({ agentId: 'admin-desk', principal: { id: 'root', kind: 'person' }, actions: ['admin'] });
    const grant = { principal: { id: 'zed', kind: 'person' }, resource: { kind: 'project', id: 'maple' }, role: 'member', purposes: ['support'] };
    for (const bounds of [{ notBefore: '2027-01-02T00:00:00Z', notAfter: '2027-01-01T00:00:00Z' }, { notAfter: '1091-06-01T00:00:00Z' }, { notBefore: '2999-01-01T00:00:00Z' }]) {
      const res = await rt.api('POST', '/v1/grants', { token: admin, body: { ...grant, ...bounds } });
      expect(res.status, JSON.stringify(bounds)).toBe(422);
      expect(res.body.code).toBe('MEM_VALIDATION');
    }
    const delegation = { agentId: 'helper-bot', resources: [{ kind: 'project', id: 'maple' }], purposes: ['support'], actions: ['search'], notAfter: '1091-06-01T00:00:00Z' };
    const res = await rt.api('POST', '/v1/delegations', { token: writer, body: delegation });
    expect(res.status).toBe(422);
    expect((await rt.api('POST', '/v1/grants', { token: admin, body: { ...grant, notBefore: '2027-01-01T00:00:00Z', notAfter: '2027-01-02T00:00:00Z' } })).status).toBe(201);
  });

  it('answers a method a path does not serve with 405 and Allow, and an unknown path with 404', async () => {
    const put = await rt.api('PUT', '/v1/memories', { token: writer, body: memory() });
    expect(put.status).toBe(405);
    expect(put.body.code).toBe('MEM_METHOD_NOT_ALLOWED');
    expect(put.headers.get('allow')).toBe('POST');
    const patch = await rt.api('PATCH', '/v1/memories/some-id', { token: writer, body: {} });
    expect(patch.status).toBe(405);
    expect(patch.headers.get('allow')?.split(', ')).toEqual(expect.arrayContaining(['DELETE', 'GET']));
    expect((await rt.api('PUT', '/v1/nowhere', { token: writer, body: {} })).status).toBe(404);
    // QUERY (a body method Fastify checks for a Content-Type before routing) and TRACE, bodiless.
    // fetch refuses to send TRACE, so these go through node:http.
    for (const method of ['QUERY', 'TRACE']) {
      const res = await new Promise<{ status?: number; allow?: string; body: string }>((resolve, reject) => {
        const req = request(`${rt.url}/v1/receipt-keys`, { method, headers: { authorization: `Bearer ${writer}` } }, (r) => {
          let body = '';
          r.on('data', (c: Buffer) => (body += c.toString()));
          r.on('end', () => resolve({ status: r.statusCode, allow: r.headers.allow, body }));
        });
        req.on('error', reject);
        req.end();
      });
      expect(res.status, method).toBe(405);
      expect(res.allow, method).toBe('GET, HEAD');
      expect((JSON.parse(res.body) as { code: string }).code).toBe('MEM_METHOD_NOT_ALLOWED');
    }
  });

  it('does not echo rejected content back in the problem detail', async () => {
    const res = await rt.api('POST', '/v1/memories', { token: writer, body: memory({ content: 'Secret-ish payload', tenantId: 'globex' }) });
    expect(res.text).not.toContain('Secret-ish payload');
  });

  it('routes every id up to 128 characters, and answers a longer path segment 414', async () => {
    const longest = 'i'.repeat(128);
    expect((await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: longest }) })).status).toBe(201);
    expect((await rt.api('GET', `/v1/memories/${longest}`, { token: writer })).body.id).toBe(longest);
    const tooLong = await rt.api('GET', `/v1/memories/${longest}i`, { token: writer });
    expect([tooLong.status, tooLong.body.code, tooLong.contentType]).toEqual([414, 'MEM_VALIDATION', expect.stringContaining('application/problem+json')]);
    const undecodable = await rt.api('GET', '/v1/memories/%E0%A4%A', { token: writer });
    expect([undecodable.status, undecodable.body.code, undecodable.contentType]).toEqual([400, 'MEM_VALIDATION', expect.stringContaining('application/problem+json')]);
  });

  describe('capabilities', () => {
    it('401 without a token, with a stable code', async () => {
      const res = await rt.api('POST', '/v1/search', { body: { query: 'x' } });
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('CAP_MISSING');
    });

    it('401 for a garbage, a tampered and a foreign-signed token', async () => {
      const [h, p, s] = writer.split('.');
      const claims = JSON.parse(Buffer.from(p ?? '', 'base64url').toString()) as Record<string, unknown>;
      const tampered = `${h}.${Buffer.from(JSON.stringify({ ...claims, tenant: 'globex' })).toString('base64url')}.${s}`;
      const unsigned = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${p}.`;
      for (const token of ['garbage', tampered, unsigned]) {
        const res = await rt.api('POST', '/v1/search', { token, body: { query: 'x' } });
        expect(res.status).toBe(401);
        expect(res.body.code).toBe('CAP_INVALID');
      }
    });

    it('401 CAP_EXPIRED once the capability has expired', async () => {
      const shortLived = await rt.issue({ agentId: 'support-bot', ttlSeconds: 1 });
      await rt.advance(2_000);
      const res = await rt.api('POST', '/v1/search', { token: shortLived, body: { query: 'x' } });
      expect(res.status).toBe(401);
      expect(res.body.code).toBe('CAP_EXPIRED');
      writer = await rt.issue({ agentId: 'support-bot', principal: { id: 'alice', kind: 'person' } });
    });

    it('403 CAP_ACTION_DENIED for an action the capability does not grant', async () => {
      const readOnly = await rt.issue({ agentId: 'reader-bot', actions: ['search'] });
      const res = await rt.api('POST', '/v1/memories', { token: readOnly, body: memory() });
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('CAP_ACTION_DENIED');
    });

    it('refuses to issue capabilities without the issuer credential', async () => {
      const none = await rt.api('POST', '/v1/capabilities', { body: { tenant: 'acme', agentId: 'x', scopes: [{ kind: 'project', id: 'p' }], purpose: 'support', actions: ['admin'] } });
      expect(none.status).toBe(401);
      expect(none.body.code).toBe('ISSUER_UNAUTHORIZED');
      const capAsIssuer = await rt.api('POST', '/v1/capabilities', { token: writer, body: { tenant: 'acme', agentId: 'x', scopes: [{ kind: 'project', id: 'p' }], purpose: 'support', actions: ['admin'] } });
      expect(capAsIssuer.status).toBe(401);
    });

    it('issues no capability for a tenant id outside the grammar, nor one scoped to another tenant', async () => {
      const issue = (body: Record<string, unknown>) => rt.api('POST', '/v1/capabilities', {
        token: rt.issuerCredential(), body: { tenant: 'acme', agentId: 'x', scopes: [{ kind: 'project', id: 'p' }], purpose: 'support', actions: ['search'], ...body },
      });
      // A tenant holding a separator could name another tenant's keys under a plain join.
      for (const tenant of ['acme:x', 'acme/x', 'acme@x', '', '-acme']) {
        const res = await issue({ tenant });
        expect([tenant, res.status, res.body.code]).toEqual([tenant, 422, 'MEM_VALIDATION']);
      }
      const foreign = await issue({ scopes: [{ kind: 'tenant', id: 'globex' }] });
      expect([foreign.status, foreign.body.code]).toEqual([422, 'MEM_VALIDATION']);
    });
  });

  describe('no existence oracle (§6.4)', () => {
    it('answers get-by-id identically for unauthorised, deleted, quarantined, expired and never-existing records', async () => {
      const other = await rt.issue({ agentId: 'other-bot', scopes: [{ kind: 'project', id: 'maplemark' }] });
      await rt.api('POST', '/v1/memories', { token: other, body: memory({ id: 'ox-hidden', resource: { kind: 'project', id: 'maplemark' }, content: 'Maplemark budget' }) });
      await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'ox-quarantined', trust: 'untrusted' }) });
      await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'ox-deleted' }) });
      await rt.api('DELETE', '/v1/memories/ox-deleted', { token: writer });
      await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'ox-expiring', expiresAt: new Date(rt.now() + 1_500).toISOString() }) });
      await rt.advance(2_000);
      const normalise = (text: string) => text.replace(/"requestId":"[^"]+"/, '"requestId":"-"');
      const answers = new Set<string>();
      for (const id of ['ox-hidden', 'ox-quarantined', 'ox-deleted', 'ox-expiring', 'ox-never-existed']) {
        const res = await rt.api('GET', `/v1/memories/${id}`, { token: writer });
        expect(res.status).toBe(404);
        answers.add(normalise(res.text));
      }
      expect(answers.size).toBe(1);
    });

    it('answers search identically whether hidden records match or not', async () => {
      const normalise = (text: string) => text.replace(/"packetId":"[^"]+"/, '').replace(/"expiresAt":"[^"]+"/, '');
      const hiddenMatch = await rt.api('POST', '/v1/search', { token: writer, body: { query: 'maplemark budget' } });
      const noMatch = await rt.api('POST', '/v1/search', { token: writer, body: { query: 'zebra unicorn' } });
      expect(hiddenMatch.body.items).toEqual([]);
      expect(normalise(hiddenMatch.text)).toBe(normalise(noMatch.text));
    });
  });

  it('rate-limits per verified principal, and anything unverified per address, with a problem+json 429', async () => {
    const limited = await start({ MEMORY_RATE_LIMIT_PER_MINUTE: '3' });
    try {
      const token = await limited.issue({ agentId: 'chatty-bot' });
      // A forged token naming this capability's tenant and agent counts against the sender's
      // address, never against the principal it names (design §9).
      const claims = token.split('.')[1] ?? '';
      const forged = `${Buffer.from('{"alg":"EdDSA","typ":"cap+jwt"}').toString('base64url')}.${claims}.${Buffer.alloc(64).toString('base64url')}`;
      const forgedStatuses: number[] = [];
      for (let i = 0; i < 4; i += 1) forgedStatuses.push((await limited.api('POST', '/v1/search', { token: forged, body: { query: 'x' } })).status);
      expect(forgedStatuses).toEqual([401, 401, 401, 429]);
      const statuses: number[] = [];
      for (let i = 0; i < 3; i += 1) statuses.push((await limited.api('POST', '/v1/search', { token, body: { query: 'x' } })).status);
      expect(statuses).toEqual([200, 200, 200]);
      const last = await limited.api('POST', '/v1/search', { token, body: { query: 'x' } });
      expect(last.status).toBe(429);
      expect(last.body.code).toBe('MEM_RATE_LIMITED');
      expect(last.contentType).toContain('application/problem+json');
      // The probes are never limited, with a query string or without.
      for (let i = 0; i < 5; i += 1) expect((await limited.api('GET', '/healthz?probe=1')).status).toBe(200);
    } finally {
      await limited.close();
    }
  }, STARTUP_MS); // a runtime of its own: the distributed one takes a while to start

  it('serves OpenAPI, health, readiness and Prometheus metrics', async () => {
    const openapi = await rt.api('GET', '/openapi.json');
    expect(openapi.status).toBe(200);
    expect(Object.keys(openapi.body.paths as object)).toContain('/v1/search');
    expect((await rt.api('GET', '/readyz')).body.status).toBe('ready');
    const metrics = await rt.api('GET', '/metrics');
    expect(metrics.text).toContain('gm_writes_total');
    expect(metrics.text).toContain('gm_search_seconds_bucket');
  });
});
