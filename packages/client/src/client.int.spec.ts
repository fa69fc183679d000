import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, eventually } from '@gm/testing';
import { loadConfig, startEmbeddedRuntime, type EmbeddedRuntime } from '@gm/embedded';
import { issueCapability, issuedCapabilities, MemoryApiError, MemoryClient, MemoryNetworkError, type CapabilityRequest, type WriteMemory } from './index.ts';

const MAPLE = { kind: 'project', id: 'maple' } as const;
const ACME = { kind: 'tenant', id: 'acme' } as const;

/** The SDK against a real embedded runtime: every route, typed errors, safe retries, token carrying, capability refresh. */
describe('@gm/client against the embedded runtime', () => {
  let runtime: EmbeddedRuntime;
  let dataDir: string;
  const clock = new ManualClock(Date.parse('2026-11-30T08:00:00.000Z'));
  let issuer: { baseUrl: string; issuerCredential: string };
  let writer: MemoryClient;
  let reviewer: MemoryClient;
  let admin: MemoryClient;

  const capability = (agentId: string, principal: string, actions: CapabilityRequest['actions']): CapabilityRequest => ({
    tenant: 'acme', agentId, principal: { id: principal, kind: 'person' }, scopes: [MAPLE], purpose: 'support', actions,
  });
  const memory = (overrides: Partial<WriteMemory> = {}): WriteMemory => ({
    subjectId: 'cust-42', resource: MAPLE, kind: 'fact', trust: 'trusted', content: 'Customer 42 prefers email over phone calls',
    provenance: [{ source: 'user', observedAt: new Date(clock.ms).toISOString() }], ...overrides,
  });

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-client-'));
    runtime = await startEmbeddedRuntime(loadConfig({ MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'error', MEMORY_DELETION_VERIFY_RETRY: '50ms' }), { clock });
    issuer = { baseUrl: runtime.url, issuerCredential: runtime.credentials.issuerCredential };
    // Capabilities carry no rights of their own (Cedar PDP, administration too): sdk-admin takes
    // maple's first admin grant (the bootstrap, on the issuer's word), then grants the roles.
    // It administers the tenant too (legal holds): a grant on {kind: 'tenant'}, for a capability scoped to it.
    const bootstrap = await issueCapability(issuer, { ...capability('sdk-admin', 'sdk-admin', ['admin', 'revoke']), scopes: [MAPLE, ACME], principal: { id: 'sdk-admin', kind: 'service' } });
    admin = new MemoryClient({ baseUrl: runtime.url, capability: bootstrap.token });
    await admin.addGrant({ principal: { id: 'sdk-admin', kind: 'service' }, resource: ACME, role: 'admin', purposes: ['support'] });
    for (const [principal, role] of [['sdk-admin', 'admin'], ['alice', 'member'], ['bob', 'member'], ['bob', 'reviewer']] as const) {
      await admin.addGrant({ principal: { id: principal, kind: principal === 'sdk-admin' ? 'service' : 'person' }, resource: MAPLE, role, purposes: ['support'] });
    }
    writer = new MemoryClient({ baseUrl: runtime.url, capability: issuedCapabilities(issuer, capability('support-bot', 'alice', ['search', 'read', 'cite', 'write', 'request_delete'])) });
    reviewer = new MemoryClient({ baseUrl: runtime.url, capability: issuedCapabilities(issuer, capability('review-desk', 'bob', ['review', 'promote', 'read', 'search'])) });
  }, 120_000);
  afterAll(async () => {
    await runtime?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('remembers, reads, searches, cites and shows the history of a record', async () => {
    const written = await writer.remember(memory({ id: 'c-1', content: 'Curlew Ltd pays by invoice' }));
    expect(written).toEqual({ id: 'c-1', version: 1, status: 'active' });
    expect((await writer.get('c-1')).content).toBe('Curlew Ltd pays by invoice');
    const packet = await writer.search({ query: 'curlew invoice', mode: 'lexical' });
    expect(packet.items.map((i) => i.recordId)).toEqual(['c-1']);
    expect(await writer.validatePacket(packet.packetId)).toEqual({ valid: true, items: [{ recordId: 'c-1', valid: true }] });
    const history = await writer.history('c-1');
    expect(history.versions.map((v) => [v.version, v.event])).toEqual([[1, 'MemoryWritten']]);
    expect((await writer.summary('cust-42')).items).toBeInstanceOf(Array);
  });

  it('turns problem+json into typed errors with code and retriable, and does not retry them', async () => {
    let sends = 0;
    const counting = new MemoryClient({
      baseUrl: runtime.url,
      capability: issuedCapabilities(issuer, capability('support-bot', 'alice', ['search', 'read', 'write'])),
      fetch: (input, init) => {
        if (String(input).includes('/v1/memories')) sends += 1;
        return fetch(input, init);
      },
    });
    const missing = await counting.get('never-was').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(MemoryApiError);
    expect(missing).toMatchObject({ status: 404, code: 'MEM_NOT_FOUND', retriable: false });
    const invalid = await counting.remember({ ...memory(), kind: 'gossip' as never }).catch((e: unknown) => e);
    expect(invalid).toMatchObject({ status: 422, code: 'MEM_VALIDATION', retriable: false });
    expect(sends).toBe(2);
  });

  it('retries a write whose answer was lost with the same Idempotency-Key: one record, the first answer', async () => {
    const keys: string[] = [];
    let dropped = false;
    const lossy = new MemoryClient({
      baseUrl: runtime.url,
      capability: issuedCapabilities(issuer, capability('support-bot', 'alice', ['search', 'read', 'write'])),
      retry: { baseDelayMs: 1 },
      fetch: async (input, init) => {
        const answer = await fetch(input, init);
        if (String(input).endsWith('/v1/memories')) {
          keys.push(new Headers(init?.headers).get('idempotency-key') ?? '');
          // The server admitted it; the answer is lost on the way back, once.
          if (!dropped) {
            dropped = true;
            throw new TypeError('socket hang up');
          }
        }
        return answer;
      },
    });
    const written = await lossy.remember(memory({ subjectId: 'cust-r', content: 'Redshank Ltd renews in April' }));
    expect(keys).toHaveLength(2);
    expect(keys[0]).toBe(keys[1]);
    expect(written.status).toBe('active');
    const found = await writer.search({ query: 'redshank renews april', mode: 'lexical' });
    expect(found.items.map((i) => i.recordId)).toEqual([written.id]);
  });

  it('does not retry an administrative write whose answer was lost: it says so instead', async () => {
    let sends = 0;
    const bootstrap = await issueCapability(issuer, { ...capability('sdk-admin', 'sdk-admin', ['admin']), scopes: [MAPLE, ACME], principal: { id: 'sdk-admin', kind: 'service' } });
    const lossyAdmin = new MemoryClient({
      baseUrl: runtime.url, capability: bootstrap.token,
      fetch: async (input, init) => {
        sends += 1;
        await fetch(input, init);
        throw new TypeError('socket hang up');
      },
    });
    const lost = await lossyAdmin.placeLegalHold({ holdId: 'hold-lost', subjectId: 'cust-l', reason: 'audit' }).catch((e: unknown) => e);
    expect(lost).toBeInstanceOf(MemoryNetworkError);
    expect(sends).toBe(1);
    expect((await admin.legalHolds()).items.map((h) => h.holdId)).toContain('hold-lost');
    await admin.releaseLegalHold('hold-lost');
    expect((await admin.legalHolds()).items.map((h) => h.holdId)).not.toContain('hold-lost');
  });

  it('carries consistency tokens within a session: an asynchronous write is readable on the next call', async () => {
    const session = writer.session();
    const accepted = await session.rememberAsync(memory({ id: 'a-1', subjectId: 'cust-a', content: 'Avocet Ltd ships on Fridays' }));
    expect(session.consistencyToken).toBe(accepted.consistencyToken);
    // No polling: the session sends the token, and the server waits until the write is folded.
    expect((await session.get('a-1')).content).toBe('Avocet Ltd ships on Fridays');
    expect(await session.command(accepted.commandId)).toMatchObject({ state: 'accepted', id: 'a-1', status: 'active' });
    const other = writer.session().resume(session.consistencyToken ?? '');
    expect((await other.search({ query: 'avocet fridays', mode: 'lexical' })).items.map((i) => i.recordId)).toEqual(['a-1']);
  });

  it('a write that waits only until stored is found by the same session\'s next search', async () => {
    const session = writer.session();
    const stored = await session.remember(memory({ id: 'w-1', subjectId: 'cust-w', content: 'Wigeon Ltd invoices in May' }), { waitFor: 'stored' });
    expect(stored).toMatchObject({ id: 'w-1', version: 1, status: 'active' });
    expect((await session.search({ query: 'wigeon invoices', subjectId: 'cust-w', mode: 'lexical' })).items.map((i) => i.recordId)).toEqual(['w-1']);
  });

  it('writes a batch, each item with a key of its own, so retrying the batch writes nothing twice', async () => {
    const items = ['Bittern', 'Brant', 'Bunting'].map((name, i) => ({ ...memory({ id: `b-${i}`, subjectId: 'cust-b', content: `${name} Ltd banks with Fjord` }), idempotencyKey: `batch-${i}` }));
    const first = await writer.rememberBatch(items);
    expect(first.items.map((i) => i.httpStatus)).toEqual([201, 201, 201]);
    const again = await writer.rememberBatch(items);
    expect(again.items.map((i) => [i.httpStatus, i.id])).toEqual(first.items.map((i) => [i.httpStatus, i.id]));
  });

  it('reviews: the quarantine queue, promote with the expected version, reject, and the conflict of a stale version', async () => {
    await writer.remember(memory({ id: 'q-1', subjectId: 'cust-q', trust: 'untrusted', content: 'Tool says Quail Ltd moved offices' }));
    await writer.remember(memory({ id: 'q-2', subjectId: 'cust-q', trust: 'untrusted', content: 'Tool says Quail Ltd closed' }));
    expect((await reviewer.quarantine()).items.map((i) => i.id)).toEqual(['q-1', 'q-2']);
    const stale = await reviewer.promote('q-1', { expectedVersion: 5 }).catch((e: unknown) => e);
    expect(stale).toMatchObject({ status: 409, code: 'MEM_CONFLICT', retriable: false });
    expect(await reviewer.promote('q-1', { expectedVersion: 1 })).toEqual({ id: 'q-1', version: 2, status: 'active' });
    expect((await reviewer.reject('q-2', { expectedVersion: 1, reason: 'inaccurate' })).status).toBe('tombstoned');
    expect((await reviewer.quarantine()).items).toEqual([]);
    expect((await reviewer.history('q-2')).versions.at(-1)?.rejection).toEqual({ reason: 'inaccurate' });
  });

  it('forgets: delete and forget jobs followed to verified, the receipt as JSON and as JWS, and the keys that verify it', async () => {
    // In a session, the job is there to read as soon as the deletion is accepted (the token waits for the orchestrator).
    const session = writer.session();
    await session.remember(memory({ id: 'd-1', subjectId: 'cust-d', content: 'Dotterel lockbox code 5521' }));
    const { jobId } = await session.delete('d-1');
    expect((await session.deletionJob(jobId)).recordIds).toEqual(['d-1']);
    const settled = (id: string) => eventually(`job ${id} settled`, async () => {
      const j = await session.deletionJob(id);
      return j.status === 'verified' || j.status === 'failed' ? j : undefined;
    }, 15_000);
    expect((await settled(jobId)).status).toBe('verified');
    // The receipt is signed after the job is verified: 409 MEM_NOT_YET_AVAILABLE until then, which waitForReceipt asks through.
    const receipt = await writer.waitForReceipt(jobId, { timeoutMs: 15_000 });
    expect(receipt.payload.jobId).toBe(jobId);
    expect(await writer.receiptJws(jobId)).toBe(receipt.receipt);
    const { keys } = await writer.receiptKeys();
    expect(keys.map((k) => k.kid)).toContain(JSON.parse(Buffer.from(receipt.receipt.split('.')[0] ?? '', 'base64url').toString()).kid);

    await session.remember(memory({ id: 'f-1', subjectId: 'cust-f', content: 'Fulmar Ltd pays late' }));
    const forget = await session.forget('cust-f');
    const forgotten = await settled(forget.jobId);
    expect(forgotten.recordIds).toEqual(['f-1']);
    await expect(writer.get('f-1')).rejects.toMatchObject({ code: 'MEM_NOT_FOUND' });
  });

  it('asks the capability source again before expiry, and once more when the server says the capability expired', async () => {
    let issued = 0;
    const source = issuedCapabilities(issuer, { ...capability('support-bot', 'alice', ['read', 'search']), ttlSeconds: 60 });
    const started = clock.ms;
    let now = started;
    const statuses: number[] = [];
    const client = new MemoryClient({
      baseUrl: runtime.url, capability: async () => { issued += 1; return source(); }, now: () => now,
      fetch: async (input, init) => {
        const answer = await fetch(input, init);
        statuses.push(answer.status);
        return answer;
      },
    });
    await client.search({ query: 'curlew' });
    await client.search({ query: 'curlew' });
    expect(issued).toBe(1);
    // Within the refresh margin (30 s) of the expiry by the client's clock: renewed before sending.
    now = started + 45_000;
    await client.search({ query: 'curlew' });
    expect(issued).toBe(2);
    expect(statuses).toEqual([200, 200, 200]);
    // The server's clock passes the expiry while the client's thinks the token fresh: CAP_EXPIRED, renewed once, sent again.
    now = started;
    clock.advance(120_000);
    expect((await client.search({ query: 'curlew', mode: 'lexical' })).items).toBeInstanceOf(Array);
    expect(statuses).toEqual([200, 200, 200, 401, 200]);
    expect(issued).toBe(3);
  });

  it('revokes a capability by jti: its next call is a typed 401', async () => {
    const issuedToken = await issueCapability(issuer, capability('support-bot', 'alice', ['read', 'search', 'revoke']));
    const doomed = new MemoryClient({ baseUrl: runtime.url, capability: issuedToken.token });
    await doomed.revokeCapability(issuedToken.jti);
    await expect(doomed.search({ query: 'curlew' })).rejects.toMatchObject({ status: 401, code: 'CAP_REVOKED', retriable: false });
  });

  it('answers the public routes without a capability', async () => {
    expect(await writer.health()).toEqual({ status: 'ok' });
    expect((await writer.ready()).status).toBeTypeOf('string');
    expect(await writer.metrics()).toContain('# TYPE');
    expect(Object.keys((await writer.openApi()).paths as object)).toContain('/v1/memories/{id}/history');
  });
});
