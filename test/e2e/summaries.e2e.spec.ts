import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { replayDataDir } from '@gm/embedded';
import { eventually, memory, startTestRuntime, STARTUP_MS, type EmbeddedTestRuntime } from './harness.ts';

interface SummaryBody {
  items: Array<{ subjectId: string; text: string; derivedFrom: string[]; updatedAt: string }>;
}

/** Summaries (§6.8) through the HTTP API of the embedded runtime: in step, partition-first, purged by deletion. */
describe('subject summaries over the API', () => {
  let rt: EmbeddedTestRuntime;
  let writer: string;
  let mapleReader: string;
  let admin: string;

  const MAPLE = { kind: 'project', id: 'maple' } as const;
  const BIRCH = { kind: 'project', id: 'birch' } as const;

  beforeAll(async () => {
    rt = await startTestRuntime();
    writer = await rt.issue({ agentId: 'support-bot', principal: { id: 'alice', kind: 'person' }, scopes: [MAPLE, BIRCH] });
    mapleReader = await rt.issue({ agentId: 'maple-bot', principal: { id: 'mallory', kind: 'person' }, scopes: [MAPLE], actions: ['search', 'read'] });
    admin = await rt.issue({ agentId: 'desk', principal: { id: 'bob', kind: 'person' }, scopes: [MAPLE, BIRCH, { kind: 'tenant', id: 'acme' }], actions: ['admin', 'search'] });
  }, STARTUP_MS);
  afterAll(async () => rt.close(), STARTUP_MS);

  const summaryOf = async (subjectId: string, token = writer): Promise<SummaryBody> => {
    const res = await rt.api<SummaryBody>('GET', `/v1/subjects/${subjectId}/summary`, { token });
    expect(res.status, res.text).toBe(200);
    return res.body;
  };
  /** Summaries follow writes eventually (their own consumer group, behind the index-builder). */
  const summaryWhen = (subjectId: string, ready: (s: SummaryBody) => boolean) =>
    eventually(`summary of ${subjectId}`, async () => {
      const summary = await summaryOf(subjectId);
      return ready(summary) ? summary : undefined;
    });
  const write = async (body: Record<string, unknown>) => {
    const res = await rt.api('POST', '/v1/memories', { token: writer, body: memory(body) });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  const finished = async (jobId: string | undefined) =>
    eventually('deletion job finished', async () => {
      const res = await rt.api('GET', `/v1/deletion-jobs/${jobId ?? ''}`, { token: admin });
      return res.body.status === 'verified' || res.body.status === 'failed' ? res.body : undefined;
    });

  it('keeps a subject’s summary in step with its facts: written, superseded, deleted', async () => {
    await write({ id: 's-1', subjectId: 'cust-s', content: 'Sparrow prefers email. Never call before noon.', confidence: 0.9 });
    await write({ id: 's-2', subjectId: 'cust-s', content: 'Sparrow lives in Lisbon.' });
    await write({ id: 's-3', subjectId: 'cust-s', content: 'Sparrow pays by invoice.' });
    await write({ id: 's-q', subjectId: 'cust-s', content: 'Sparrow owes a fortune.', trust: 'untrusted' });
    let summary = await summaryWhen('cust-s', (s) => s.items[0]?.derivedFrom.length === 3);
    expect(summary.items).toHaveLength(1);
    expect(summary.items[0]?.text.split('\n').sort()).toEqual(['Sparrow lives in Lisbon.', 'Sparrow pays by invoice.', 'Sparrow prefers email.']);
    expect(summary.items[0]?.derivedFrom).toEqual(['s-1', 's-2', 's-3']);

    // Supersession: the summary is rebuilt without the superseded fact.
    await write({ id: 's-2b', subjectId: 'cust-s', content: 'Sparrow moved to Porto.', supersedesId: 's-2' });
    summary = await summaryWhen('cust-s', (s) => s.items[0]?.derivedFrom.includes('s-2b') ?? false);
    expect(summary.items[0]?.text).not.toContain('Lisbon');
    expect(summary.items[0]?.text).toContain('Porto');
    expect(summary.items[0]?.derivedFrom).toEqual(['s-1', 's-2b', 's-3']);

    // Deletion: the summary target rebuilds, the job verifies, the text never comes back.
    const del = await rt.api('DELETE', '/v1/memories/s-3', { token: writer });
    expect(del.status).toBe(202);
    expect((await summaryOf('cust-s')).items.every((i) => !i.text.includes('invoice'))).toBe(true);
    const job = await finished(del.body.jobId);
    expect(job.status).toBe('verified');
    expect(job.evidence?.find((e) => e.target === 'summary')).toMatchObject({ status: 'done' });
    expect(JSON.stringify(job)).not.toContain('invoice');
    expect(await rt.runtime.summaries.holding('acme', ['s-3'])).toEqual([]);
    const partition = (await rt.index.get('acme', 's-1'))?.partition ?? '';
    expect(JSON.stringify(await rt.runtime.summaries.get('acme', partition, 'cust-s'))).not.toContain('invoice');
    summary = await summaryOf('cust-s');
    expect(summary.items[0]?.derivedFrom).toEqual(['s-1', 's-2b']);
    expect(summary.items[0]?.text).not.toContain('owes');
  });

  it('answers only from the partitions the caller may search: another project’s summary is never seen', async () => {
    await write({ id: 'm-1', subjectId: 'cust-two', visibility: 'team', content: 'Tern likes the maple dashboard.' });
    await write({ id: 'b-1', subjectId: 'cust-two', visibility: 'team', resource: BIRCH, content: 'Tern is negotiating a birch discount.' });
    const both = await summaryWhen('cust-two', (s) => s.items.length === 2);
    expect(both.items.map((i) => i.derivedFrom).sort()).toEqual([['b-1'], ['m-1']]);

    const mapleOnly = await summaryOf('cust-two', mapleReader);
    expect(mapleOnly.items).toEqual([expect.objectContaining({ subjectId: 'cust-two', derivedFrom: ['m-1'] })]);
    expect(JSON.stringify(mapleOnly)).not.toMatch(/birch|b-1/);
    // The item shape carries no partition, and nothing counts what was left out.
    expect(Object.keys(mapleOnly.items[0] ?? {}).sort()).toEqual(['derivedFrom', 'subjectId', 'text', 'updatedAt']);
    expect(Object.keys(mapleOnly)).toEqual(['items']);
  });

  it('looks the same for an unknown subject, an unreadable one and another purpose', async () => {
    await write({ id: 'birch-only', subjectId: 'cust-birch', resource: BIRCH, content: 'Wren has a birch contract.' });
    await summaryWhen('cust-birch', (s) => s.items.length === 1);
    const unknown = await rt.api('GET', '/v1/subjects/nobody-ever/summary', { token: mapleReader });
    const hidden = await rt.api('GET', '/v1/subjects/cust-birch/summary', { token: mapleReader });
    expect([unknown.status, unknown.text]).toEqual([200, '{"items":[]}']);
    expect([hidden.status, hidden.text]).toEqual([200, '{"items":[]}']);
    // A string that cannot be an id names no subject either: the same answer, never a 404.
    for (const notAnId of ['a%20b', '%C3%BC', 'semi;colon', 'x'.repeat(128).replace(/^x/, '~')]) {
      const res = await rt.api('GET', `/v1/subjects/${notAnId}/summary`, { token: mapleReader });
      expect([res.status, res.text], notAnId).toEqual([200, '{"items":[]}']);
    }
    const planner = await rt.issue({ agentId: 'plan-bot', principal: { id: 'alice', kind: 'person' }, scopes: [MAPLE, BIRCH], purpose: 'planning', actions: ['search'] });
    expect((await summaryOf('cust-birch', planner)).items).toEqual([]);
    expect((await summaryOf('cust-birch')).items).toHaveLength(1);
  });

  it('forgetting a subject removes its summaries everywhere', async () => {
    await write({ id: 'f-1', subjectId: 'cust-gone', content: 'Grebe collects stamps.' });
    await write({ id: 'f-2', subjectId: 'cust-gone', resource: BIRCH, content: 'Grebe rides a bike.' });
    await summaryWhen('cust-gone', (s) => s.items.length === 2);
    const forget = await rt.api('POST', '/v1/subjects/cust-gone/forget', { token: writer, body: {} });
    expect(forget.status).toBe(202);
    expect((await summaryOf('cust-gone')).items).toEqual([]);
    expect((await finished(forget.body.jobId)).status).toBe('verified');
    expect(await rt.runtime.summaries.holding('acme', ['f-1', 'f-2'])).toEqual([]);
  });

  it('rebuilds the identical summaries by replaying the log, and lists the route in the OpenAPI document', async () => {
    const before = await rt.runtime.digest();
    expect(before.summaries).toMatch(/^[0-9a-f]{64}$/);
    await rt.runtime.close();
    const report = await replayDataDir(rt.dataDir, rt.runtime.config.partitions, undefined, rt.clock);
    expect(report.after.summaries).toBe(before.summaries);
    expect(report.identical).toBe(true);
    await rt.restart();
    expect((await summaryOf('cust-s')).items[0]?.derivedFrom).toEqual(['s-1', 's-2b']);
    const doc = await rt.api<{ paths: Record<string, { get?: { summary: string } }> }>('GET', '/openapi.json');
    expect(doc.body.paths['/v1/subjects/{subjectId}/summary']?.get?.summary).toContain('(search: in the partitions');
  }, STARTUP_MS);
});
