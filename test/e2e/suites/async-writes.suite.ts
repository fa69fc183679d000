import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, memory, STARTUP_MS, type StartRuntime, type TestRuntime } from '../harness.ts';

const ASYNC = { prefer: 'respond-async' };

/** Asynchronous writes (docs/ingest.md): 202 once the command is durable, its outcome at GET /v1/commands/{id}. */
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
});
