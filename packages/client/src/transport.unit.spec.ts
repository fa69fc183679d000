import { describe, expect, it } from 'vitest';
import { MemoryApiError, MemoryNetworkError, retryAfterMs } from './errors.ts';
import { MemoryClient } from './client.ts';
import { Transport, type Call } from './transport.ts';

/** A scripted server: each send takes the next answer (a Response, or an error to throw). */
function scripted(answers: Array<Response | Error>) {
  const sent: Array<{ url: string; headers: Headers }> = [];
  const fetchDouble: typeof fetch = async (input, init) => {
    sent.push({ url: String(input), headers: new Headers(init?.headers) });
    const next = answers.shift();
    if (next === undefined) throw new Error('no more scripted answers');
    if (next instanceof Error) throw next;
    return next;
  };
  return { fetchDouble, sent };
}

const problem = (status: number, code: string, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify({ type: 'about:blank', title: 't', status, code, detail: `${code} detail` }), { status, headers: { 'content-type': 'application/problem+json', ...headers } });
const okJson = (body: unknown) => new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });
const read: Call = { method: 'GET', path: '/v1/memories/x', safeToRetry: true };
const once: Call = { method: 'POST', path: '/v1/grants', body: {}, safeToRetry: false };
const fast = { attempts: 4, baseDelayMs: 0, maxDelayMs: 0 };

describe('Transport', () => {
  it('retries a safe call on retriable answers and network errors, then answers', async () => {
    const { fetchDouble, sent } = scripted([problem(503, 'MEM_TIMEOUT'), new TypeError('reset'), problem(429, 'MEM_RATE_LIMITED'), okJson({ id: 'x' })]);
    const t = new Transport({ baseUrl: 'http://memory.test', capability: 'tok', fetch: fetchDouble, retry: fast });
    expect((await t.send(read)).body).toEqual({ id: 'x' });
    expect(sent).toHaveLength(4);
    expect(sent.every((s) => s.headers.get('authorization') === 'Bearer tok')).toBe(true);
  });

  it('gives up after the policy\'s attempts with the last error, and never retries an unsafe call', async () => {
    const busy = scripted(Array.from({ length: 4 }, () => problem(503, 'MEM_UNAVAILABLE')));
    const t = new Transport({ baseUrl: 'http://memory.test', capability: 'tok', fetch: busy.fetchDouble, retry: fast });
    await expect(t.send(read)).rejects.toMatchObject({ code: 'MEM_UNAVAILABLE', retriable: true });
    expect(busy.sent).toHaveLength(4);
    const lost = scripted([new TypeError('reset')]);
    await expect(new Transport({ baseUrl: 'http://memory.test', capability: 'tok', fetch: lost.fetchDouble, retry: fast }).send(once)).rejects.toBeInstanceOf(MemoryNetworkError);
    expect(lost.sent).toHaveLength(1);
  });

  it('does not retry what answers the same every time: validation, conflicts, not found, internal errors', async () => {
    for (const [status, code] of [[422, 'MEM_VALIDATION'], [409, 'MEM_CONFLICT'], [404, 'MEM_NOT_FOUND'], [500, 'MEM_INTERNAL'], [403, 'CAP_SCOPE_DENIED']] as const) {
      const { fetchDouble, sent } = scripted([problem(status, code)]);
      const error = await new Transport({ baseUrl: 'http://memory.test', capability: 'tok', fetch: fetchDouble, retry: fast }).send(read).catch((e: unknown) => e);
      expect(error).toMatchObject({ status, code, retriable: false });
      expect(sent).toHaveLength(1);
    }
  });

  it('renews the capability once on CAP_EXPIRED, even for an unsafe call: the request never ran', async () => {
    const { fetchDouble, sent } = scripted([problem(401, 'CAP_EXPIRED'), okJson({ grantId: 'g' })]);
    let issued = 0;
    const t = new Transport({ baseUrl: 'http://memory.test', capability: async () => ({ token: `tok-${++issued}`, expiresAt: '2999-01-01T00:00:00Z' }), fetch: fetchDouble, retry: fast });
    expect((await t.send(once)).body).toEqual({ grantId: 'g' });
    expect(sent.map((s) => s.headers.get('authorization'))).toEqual(['Bearer tok-1', 'Bearer tok-2']);
    // A second CAP_EXPIRED in a row is the answer: the source's tokens are expired too.
    const again = scripted([problem(401, 'CAP_EXPIRED'), problem(401, 'CAP_EXPIRED')]);
    const stale = new Transport({ baseUrl: 'http://memory.test', capability: async () => ({ token: 'old', expiresAt: '2999-01-01T00:00:00Z' }), fetch: again.fetchDouble, retry: fast });
    await expect(stale.send(read)).rejects.toMatchObject({ code: 'CAP_EXPIRED' });
    expect(again.sent).toHaveLength(2);
  });

  it('shares one refresh among concurrent calls', async () => {
    const { fetchDouble } = scripted([okJson({}), okJson({}), okJson({})]);
    let issued = 0;
    const t = new Transport({ baseUrl: 'http://memory.test', capability: async () => ({ token: `tok-${++issued}`, expiresAt: '2999-01-01T00:00:00Z' }), fetch: fetchDouble });
    await Promise.all([t.send(read), t.send(read), t.send(read)]);
    expect(issued).toBe(1);
  });

  it('keeps the status of an answer that is not problem+json (a proxy\'s page), retriable by its status', async () => {
    const { fetchDouble } = scripted([new Response('<html>Bad Gateway</html>', { status: 502, statusText: 'Bad Gateway' })]);
    const error = await new Transport({ baseUrl: 'http://memory.test', capability: 'tok', fetch: fetchDouble, retry: { attempts: 1 } }).send(read).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MemoryApiError);
    expect(error).toMatchObject({ status: 502, code: 'HTTP_502', retriable: true });
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    expect(retryAfterMs('2', 0)).toBe(2000);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6000);
    expect(retryAfterMs('soon', 0)).toBeUndefined();
    expect(retryAfterMs(null, 0)).toBeUndefined();
  });

  it('refuses a policy of no attempts at all', () => {
    expect(() => new Transport({ baseUrl: 'http://memory.test', capability: 'tok', retry: { attempts: 0 } })).toThrow(RangeError);
  });
});

describe('waitForReceipt', () => {
  // A capability the client can read the expiry of (only its payload is looked at).
  const TOKEN = ['e30', Buffer.from(JSON.stringify({ exp: Math.floor(Date.now() / 1000) + 600 })).toString('base64url'), 'c2ln'].join('.');
  const receipt = { receipt: 'a.b.c', payload: { jobId: 'j-1', status: 'verified' } };

  it('asks again while the job is not recorded yet (404, within its grace) and its receipt not signed (409), then answers it', async () => {
    const { fetchDouble, sent } = scripted([problem(404, 'MEM_NOT_FOUND'), problem(409, 'MEM_NOT_YET_AVAILABLE'), problem(409, 'MEM_NOT_YET_AVAILABLE'), okJson(receipt)]);
    const client = new MemoryClient({ baseUrl: 'http://memory.test', capability: TOKEN, fetch: fetchDouble, retry: { attempts: 1 } });
    expect(await client.waitForReceipt('j-1', { intervalMs: 0 })).toEqual(receipt);
    expect(sent.map((s) => new URL(s.url).pathname)).toEqual(Array(4).fill('/v1/deletion-jobs/j-1/receipt'));
  });

  it('throws a 404 once its grace is over, and the last 409 at its deadline', async () => {
    const unknown = scripted([problem(404, 'MEM_NOT_FOUND')]);
    await expect(new MemoryClient({ baseUrl: 'http://memory.test', capability: TOKEN, fetch: unknown.fetchDouble, retry: { attempts: 1 } })
      .waitForReceipt('j-1', { intervalMs: 0, unknownGraceMs: 0 })).rejects.toMatchObject({ code: 'MEM_NOT_FOUND' });
    const pending = scripted([problem(409, 'MEM_NOT_YET_AVAILABLE')]);
    await expect(new MemoryClient({ baseUrl: 'http://memory.test', capability: TOKEN, fetch: pending.fetchDouble, retry: { attempts: 1 } })
      .waitForReceipt('j-1', { timeoutMs: 0 })).rejects.toMatchObject({ code: 'MEM_NOT_YET_AVAILABLE', retriable: true });
  });
});
