import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, memory, STARTUP_MS, type StartRuntime, type TestRuntime } from '../harness.ts';

const ASYNC = { prefer: 'respond-async' };
const STORED = { prefer: 'wait-for=stored' };

/**
 * Asynchronous writes (docs/ingest.md): 202 once the command is durable, its outcome at GET
 * /v1/commands/{id}. And writes that wait only until they are stored (`Prefer: wait-for=stored`,
 * docs/api.md): decided as ever, answered before the search indexes caught up.
 */
export const asyncWritesSuite = (start: StartRuntime) => describe('asynchronous writes over the API', () => {
  let rt: TestRuntime;
  let writer: string;

  beforeAll(async () => {
    rt = await start();
    writer = await rt.issue({ agentId: 'async-bot', principal: { id: 'dana', kind: 'person' } });
  }, STARTUP_MS);
  afterAll(async () => rt.close(), STARTUP_MS);

  const outcome = (commandId: string, token = writer) => rt.api('GET', `/v1/commands/${commandId}`, { token });
  const decided = (commandId: string) => eventually(`command ${commandId} decided`, async () => {
    const res = await outcome(commandId);
    return res.body.state !== 'pending' && res;
  });

  it('answers 202 with the command and a token; a read with the token sees the write, and the command says accepted', async () => {
    const sent = await rt.api('POST', '/v1/memories', { token: writer, headers: ASYNC, body: memory({ id: 'as-1', subjectId: 'as-s1', content: 'Curlew moved to Oslo' }) });
    expect(sent.status).toBe(202);
    expect(sent.headers.get('preference-applied')).toBe('respond-async');
    const { commandId, consistencyToken } = sent.body as unknown as { commandId: string; consistencyToken: string };
    expect(sent.headers.get('consistency-token')).toBe(consistencyToken);
    const read = await rt.api('GET', '/v1/memories/as-1', { token: writer, headers: { 'consistency-token': consistencyToken } });
    expect(read.status).toBe(200);
    expect(read.body.content).toBe('Curlew moved to Oslo');
    const found = await rt.api('POST', '/v1/search', { token: writer, headers: { 'consistency-token': consistencyToken }, body: { query: 'curlew oslo', subjectId: 'as-s1' } });
    expect(found.body.items.map((i) => i.recordId)).toEqual(['as-1']);
    expect((await decided(commandId)).body).toEqual({ commandId, state: 'accepted', id: 'as-1', version: 1, status: 'active' });
  });

  it('keeps a rejection as the problem the synchronous write would have answered', async () => {
    const sent = await rt.api('POST', '/v1/memories', { token: writer, headers: ASYNC, body: memory({ id: 'as-conflict', subjectId: 'as-s2', expectedVersion: 4 }) });
    expect(sent.status).toBe(202);
    const res = await decided(String(sent.body.commandId));
    expect(res.body.state).toBe('rejected');
    expect(res.body.error).toMatchObject({ status: 409, code: 'MEM_CONFLICT' });
    expect((await rt.api('GET', '/v1/memories/as-conflict', { token: writer })).status).toBe(404);
  });

  it('applies the edge rules before the 202', async () => {
    const refused = await rt.api('POST', '/v1/memories', { token: writer, headers: ASYNC, body: memory({ id: 'as-imp', subjectId: 'as-s3', agentId: 'not-me' }) });
    expect([refused.status, refused.body.code]).toEqual([403, 'MEM_IMPERSONATION']);
  });

  it("shows a command only to the writing capability's principal; an unknown id answers the same", async () => {
    const sent = await rt.api('POST', '/v1/memories', { token: writer, headers: ASYNC, body: memory({ id: 'as-own', subjectId: 'as-s4' }) });
    const commandId = String(sent.body.commandId);
    await decided(commandId);
    const stranger = await rt.issue({ agentId: 'other-async-bot', principal: { id: 'erin', kind: 'person' } });
    const theirs = await outcome(commandId, stranger);
    const unknown = await outcome('01JZZZZZZZZZZZZZZZZZZZZZZZ', writer);
    expect([theirs.status, theirs.body.code]).toEqual([404, 'MEM_NOT_FOUND']);
    expect([unknown.status, unknown.body.code]).toEqual([404, 'MEM_NOT_FOUND']);
    expect(theirs.body.detail).toBe(unknown.body.detail);
  });

  it('takes a batch asynchronously: 202, a command per accepted item, the edge refusals at once', async () => {
    const items = [
      memory({ id: 'as-b1', subjectId: 'as-b', content: 'Dunlin pays in euros' }),
      memory({ id: 'as-b2', subjectId: 'as-b', agentId: 'not-me' }),
      memory({ id: 'as-b3', subjectId: 'as-b', content: 'Dunlin closes on Fridays' }),
    ];
    const sent = await rt.api('POST', '/v1/memories:batch', { token: writer, headers: ASYNC, body: { items } });
    expect(sent.status).toBe(202);
    const outcomes = (sent.body as unknown as { items: Array<{ httpStatus: number; commandId?: string; error?: { code: string } }> }).items;
    expect(outcomes.map((o) => o.httpStatus)).toEqual([202, 403, 202]);
    expect(outcomes[1]?.error?.code).toBe('MEM_IMPERSONATION');
    const token = String(sent.body.consistencyToken);
    const found = await rt.api('POST', '/v1/search', { token: writer, headers: { 'consistency-token': token }, body: { query: 'dunlin', subjectId: 'as-b' } });
    expect(found.body.items.map((i) => i.recordId).sort()).toEqual(['as-b1', 'as-b3']);
    for (const o of [outcomes[0], outcomes[2]]) expect((await decided(String(o?.commandId))).body.state).toBe('accepted');
  });

  it('with wait-for=stored answers 201 once stored: a read by id sees it at once, a search with its token too', async () => {
    const sent = await rt.api('POST', '/v1/memories', { token: writer, headers: STORED, body: memory({ id: 'st-1', subjectId: 'st-s1', content: 'Plover moved to Bergen' }) });
    expect(sent.status).toBe(201);
    expect(sent.headers.get('preference-applied')).toBe('wait-for=stored');
    expect(sent.headers.get('read-your-writes')).toBe('stored');
    expect(sent.body).toMatchObject({ id: 'st-1', version: 1, status: 'active' });
    const read = await rt.api('GET', '/v1/memories/st-1', { token: writer });
    expect([read.status, read.body.content]).toEqual([200, 'Plover moved to Bergen']);
    const token = String(sent.headers.get('consistency-token'));
    const found = await rt.api('POST', '/v1/search', { token: writer, headers: { 'consistency-token': token }, body: { query: 'plover bergen', subjectId: 'st-s1' } });
    expect(found.body.items.map((i) => i.recordId)).toEqual(['st-1']);
  });

  it('with wait-for=stored still answers a conflict and an idempotent retry as the default write does', async () => {
    const conflict = await rt.api('POST', '/v1/memories', { token: writer, headers: STORED, body: memory({ id: 'st-conflict', subjectId: 'st-s2', expectedVersion: 3 }) });
    expect([conflict.status, conflict.body.code]).toEqual([409, 'MEM_CONFLICT']);
    const headers = { ...STORED, 'idempotency-key': 'st-once' };
    const body = memory({ id: 'st-once', subjectId: 'st-s2', content: 'Plover pays by card' });
    const first = await rt.api('POST', '/v1/memories', { token: writer, headers, body });
    const again = await rt.api('POST', '/v1/memories', { token: writer, headers, body });
    expect([first.status, again.status]).toEqual([201, 201]);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('read-your-writes')).toBe('stored');
  });

  it('honours respond-async over wait-for=stored, and ignores a preference it does not know', async () => {
    const both = await rt.api('POST', '/v1/memories', { token: writer, headers: { prefer: 'wait-for=stored, respond-async' }, body: memory({ id: 'st-both', subjectId: 'st-s3' }) });
    expect([both.status, both.headers.get('preference-applied')]).toEqual([202, 'respond-async']);
    const unknown = await rt.api('POST', '/v1/memories', { token: writer, headers: { prefer: 'wait-for=indexed' }, body: memory({ id: 'st-unknown', subjectId: 'st-s3' }) });
    expect([unknown.status, unknown.headers.get('preference-applied'), unknown.headers.get('read-your-writes')]).toEqual([201, null, 'confirmed']);
  });

  it('takes a batch with wait-for=stored: each item decided, the batch answered once stored', async () => {
    const items = [memory({ id: 'st-b1', subjectId: 'st-b', content: 'Sanderling pays in krone' }), memory({ id: 'st-b2', subjectId: 'st-b', expectedVersion: 2 })];
    const sent = await rt.api('POST', '/v1/memories:batch', { token: writer, headers: STORED, body: { items } });
    expect([sent.status, sent.headers.get('preference-applied'), sent.headers.get('read-your-writes')]).toEqual([200, 'wait-for=stored', 'stored']);
    const outcomes = (sent.body as unknown as { items: Array<{ httpStatus: number; error?: { code: string } }> }).items;
    expect(outcomes.map((o) => o.httpStatus)).toEqual([201, 409]);
    expect((await rt.api('GET', '/v1/memories/st-b1', { token: writer })).status).toBe(200);
  });
});
