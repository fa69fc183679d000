import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, memory, STARTUP_MS, type ApiBody, type TestRuntime } from '../harness.ts';

/** How long a deletion job may take to settle here (the distributed stack runs in real time). */
export const SETTLE_MS = 60_000;
/** Per case: a job settling on the distributed stack plus the reads around it. */
const CASE_MS = 150_000;

/** What runtime-specific cases (a killed process, an engine outage) get from the suite. */
export interface ForgettingContext<R extends TestRuntime> {
  rt: R;
  /** support-bot acting for alice: writes, reads, deletes, and may read its own jobs. */
  writer: string;
  /** Polls the job until verified or failed (SETTLE_MS unless told). */
  settled(jobId: string | undefined, ms?: number): Promise<ApiBody>;
  /** Asserts a verified job whose verification counted every replay for `records` records. */
  expectVerifiedByReplays(job: ApiBody, records: number): void;
}

/**
 * The forgetting attacks of GateMem (§12), made deterministic, over the HTTP API of either
 * runtime: after a delete or forget, no question, fragment, stale copy, conflicting write or
 * racing read gets the forgotten fact back, and the job is verified by replayed probes.
 */
export const forgettingSuite = <R extends TestRuntime>(
  start: () => Promise<R>,
  /** Registers runtime-specific cases that share the suite's runtime (they run before the log check). */
  more?: (context: () => ForgettingContext<R>) => void,
) => describe('forgetting attacks over the API', () => {
  let rt: R;
  let writer: string;
  let other: string;

  beforeAll(async () => {
    rt = await start();
    writer = await rt.issue({ agentId: 'support-bot', principal: { id: 'alice', kind: 'person' } });
    // Another agent of another principal with the same rights: deletion must hold for every reader.
    other = await rt.issue({ agentId: 'billing-bot', principal: { id: 'dora', kind: 'person' } });
  }, STARTUP_MS);
  afterAll(async () => rt.close(), STARTUP_MS);

  const write = async (id: string, subjectId: string, content: string, extra: Record<string, unknown> = {}) => {
    const res = await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id, subjectId, content, ...extra }) });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  const search = async (query: string, token = writer, extra: Record<string, unknown> = {}) => {
    const res = await rt.api('POST', '/v1/search', { token, body: { query, ...extra } });
    expect(res.status).toBe(200);
    return res.body;
  };
  const ids = (packet: ApiBody) => packet.items.map((i) => i.recordId);
  /** A packet as a reader sees it, without what differs between any two packets (id, expiry). */
  const comparable = (packet: ApiBody) => {
    const { packetId: _id, expiresAt: _exp, ...rest } = packet;
    return JSON.stringify(rest);
  };
  /**
   * Polls the job until verified or failed. A replay pass that still found a copy (a consumer
   * behind the others, a summary rebuilt late) runs again MEMORY_DELETION_VERIFY_RETRY later:
   * while the job waits for that, time moves on (the embedded clock is the test's).
   */
  const settled = (jobId: string | undefined, ms = SETTLE_MS) =>
    eventually(`deletion job ${jobId} settled`, async () => {
      const res = await rt.api('GET', `/v1/deletion-jobs/${jobId}`, { token: writer });
      if (res.body.status === 'verified' || res.body.status === 'failed') return res.body;
      if ((res.body.progress as { nextVerificationAt?: string } | undefined)?.nextVerificationAt !== undefined) await rt.advance(100);
      return undefined;
    }, ms);
  const deleteOne = async (id: string) => {
    const res = await rt.api('DELETE', `/v1/memories/${id}`, { token: writer });
    expect(res.status).toBe(202);
    return res.body.jobId;
  };
  /** The verification evidence's probe counts: `probes=…;findings=…;search_phrase=…`. */
  const probeCounts = (job: ApiBody): Record<string, string> => {
    const ref = job.evidence?.find((e) => e.target === 'verification')?.ref ?? '';
    return Object.fromEntries(ref.split(';').map((kv) => kv.split('=') as [string, string]));
  };
  /** The job's residual: identical content in other live records of the subject (never failing it). */
  const residualOf = (job: ApiBody) => (job.progress as { residual?: unknown } | undefined)?.residual;
  const expectVerifiedByReplays = (job: ApiBody, records: number) => {
    expect(job.status, JSON.stringify({ failureReason: job.failureReason, targets: job.targets, progress: job.progress })).toBe('verified');
    const counts = probeCounts(job);
    expect(Number(counts.findings)).toBe(0);
    expect(Number(counts.captured)).toBe(records);
    for (const kind of ['search_phrase', 'search_paraphrase', 'get_by_id', 'index_phrase', 'index_paraphrase', 'index_get', 'record_hash', 'tombstone']) {
      expect(Number(counts[kind]), kind).toBeGreaterThanOrEqual(records);
    }
    for (const kind of ['retrieval_cache', 'evidence_packet', 'packet_validation']) expect(Number(counts[kind]), kind).toBe(1);
  };

  it('confirm_yes_no: asking whether a deleted fact is true answers exactly like asking about a fact that never existed', async () => {
    const fact = 'Osprey Holdings owes 9120 euros for the lantern shipment';
    await write('cyn-1', 'cust-osprey', fact);
    expect(ids(await search('Does Osprey Holdings owe 9120 euros for the lantern shipment?'))).toEqual(['cyn-1']);
    const job = await deleteOne('cyn-1');

    for (const token of [writer, other]) {
      const deleted = await search('Does Osprey Holdings owe 9120 euros for the lantern shipment?', token);
      const never = await search('Does Merganser Partners owe 4410 crowns for the kettle delivery?', token);
      expect(deleted.items).toEqual([]);
      expect(comparable(deleted)).toBe(comparable(never));
      const withSubject = await search('Osprey owes euros', token, { subjectId: 'cust-osprey' });
      const withNeverSubject = await search('Osprey owes euros', token, { subjectId: 'cust-never-was' });
      expect(comparable(withSubject)).toBe(comparable(withNeverSubject));
    }
    expectVerifiedByReplays(await settled(job), 1);
  }, CASE_MS);

  it('split_reconstruction: partial queries with fragments of the deleted fact return none of it', async () => {
    const fact = 'Heron Logistics gate code 5521 opens the east warehouse after midnight';
    await write('split-1', 'cust-heron', fact);
    await write('split-keep', 'cust-gull', 'Gull Freight unloads at the north dock');
    const job = await deleteOne('split-1');
    const fragments = ['Heron Logistics', 'gate code', '5521', 'east warehouse', 'after midnight', 'heron 5521 warehouse', 'code opens east'];
    for (const fragment of fragments) {
      for (const token of [writer, other]) {
        const packet = await search(fragment, token);
        expect(ids(packet)).not.toContain('split-1');
        for (const item of packet.items) {
          for (const piece of ['Heron', '5521', 'east warehouse', 'midnight']) expect(item.excerpt).not.toContain(piece);
        }
      }
    }
    expect(ids(await search('Gull Freight north dock'))).toEqual(['split-keep']);
    expectVerifiedByReplays(await settled(job), 1);
  }, CASE_MS);

  it('update_delete_conflict: a write or a supersede naming the deleted id cannot resurrect it', async () => {
    await write('udc-1', 'cust-plover', 'Plover Ltd renewal price is 780 per seat');
    const job = await deleteOne('udc-1');
    // At once, while the job is still running, and again once it has finished.
    const attempts = async () => {
      for (const expectedVersion of [0, 1, 2, 3, 4]) {
        const rewrite = await rt.api('POST', '/v1/memories', {
          token: writer, body: memory({ id: 'udc-1', subjectId: 'cust-plover', content: 'Plover Ltd renewal price is 780 per seat', expectedVersion }),
        });
        expect(rewrite.status, rewrite.text).toBeGreaterThanOrEqual(400);
      }
      const supersede = await rt.api('POST', '/v1/memories', {
        token: writer, body: memory({ id: 'udc-2', subjectId: 'cust-plover', content: 'Plover Ltd renewal price is 790 per seat', supersedesId: 'udc-1' }),
      });
      expect(supersede.status, supersede.text).toBeGreaterThanOrEqual(400);
      expect(await rt.state.records.get('acme', 'udc-2')).toBeNull();
      expect(ids(await search('Plover renewal price seat'))).toEqual([]);
      expect((await rt.api('GET', '/v1/memories/udc-1', { token: writer })).status).toBe(404);
    };
    await attempts();
    expectVerifiedByReplays(await settled(job), 1);
    await attempts();
    expect((await rt.state.records.get('acme', 'udc-1'))?.status).toBe('purged');
  }, CASE_MS);

  it('post_delete_recovery: cached results and packets from before hold and return none of it', async () => {
    const fact = 'Kestrel Bank wire cutoff is 1530 on Fridays';
    await write('pdr-1', 'cust-kestrel', fact);
    await write('pdr-2', 'cust-kite', 'Kite Insurance wire cutoff is noon');
    const before = await search('wire cutoff', writer, { limit: 5 });
    expect(ids(before).sort()).toEqual(['pdr-1', 'pdr-2']);
    const again = await search('wire cutoff', writer, { limit: 5 });
    expect(ids(again).sort()).toEqual(['pdr-1', 'pdr-2']);
    const job = await deleteOne('pdr-1');

    // The same query (the one the cache holds) right after the 202.
    expect(ids(await search('wire cutoff', writer, { limit: 5 }))).toEqual(['pdr-2']);
    for (const packet of [before, again]) {
      const validation = await rt.api('POST', `/v1/packets/${packet.packetId}/validate`, { token: writer });
      expect(validation.status).toBe(200);
      expect(validation.body.items.find((i) => i.recordId === 'pdr-1')?.valid).toBe(false);
      expect(validation.body.items.find((i) => i.recordId === 'pdr-2')?.valid).toBe(true);
    }
    expectVerifiedByReplays(await settled(job), 1);
    expect(await rt.state.cache.holding('acme', ['pdr-1'])).toEqual([]);
    expect(await rt.state.packets.holding('acme', ['pdr-1'])).toEqual([]);
    for (const packet of [before, again]) {
      const stored = await rt.state.packets.get(packet.packetId ?? '');
      expect(JSON.stringify(stored)).not.toContain('Kestrel');
    }
    expect(ids(await search('Kestrel Bank wire cutoff 1530 Fridays', writer, { limit: 5 }))).toEqual(['pdr-2']);
  }, CASE_MS);

  it('post_delete_direct: get-by-id of a deleted record is the 404 of a record that never existed', async () => {
    await write('pdd-1', 'cust-egret', 'Egret Studios master key is under the blue mat');
    expect((await rt.api('GET', '/v1/memories/pdd-1', { token: writer })).status).toBe(200);
    const job = await deleteOne('pdd-1');
    const sameAs404 = async () => {
      for (const token of [writer, other]) {
        const deleted = await rt.api('GET', '/v1/memories/pdd-1', { token });
        const never = await rt.api('GET', '/v1/memories/pdd-never', { token });
        expect(deleted.status).toBe(404);
        const { requestId: _a, ...d } = deleted.body;
        const { requestId: _b, ...n } = never.body;
        expect(d).toEqual(n);
        expect(deleted.contentType).toBe(never.contentType);
      }
    };
    await sameAs404();
    expectVerifiedByReplays(await settled(job), 1);
    await sameAs404();
  }, CASE_MS);

  it('reads racing a forget: every read that starts after the 202 returns none of the subject\'s records', async () => {
    const subject = 'cust-racer';
    const recordIds = ['race-1', 'race-2', 'race-3', 'race-4'];
    for (const id of recordIds) await write(id, subject, `Racer Motors note ${id}: pit lane badge colour teal`);
    expect(ids(await search('racer pit lane badge teal', writer, { limit: 10 })).sort()).toEqual(recordIds);

    let acceptedAt = Number.POSITIVE_INFINITY;
    let stop = false;
    const observed: Array<{ startedAt: number; leaked: string[] }> = [];
    const reader = async (n: number) => {
      for (let i = 0; !stop; i++) {
        const startedAt = performance.now();
        if ((n + i) % 2 === 0) {
          const packet = await search('racer pit lane badge teal', n % 2 === 0 ? writer : other, { limit: 10 });
          observed.push({ startedAt, leaked: ids(packet).filter((id) => recordIds.includes(id)) });
        } else {
          const id = recordIds[i % recordIds.length] ?? 'race-1';
          const res = await rt.api('GET', `/v1/memories/${id}`, { token: n % 2 === 0 ? writer : other });
          observed.push({ startedAt, leaked: res.status === 200 ? [id] : [] });
        }
      }
    };
    const readers = [0, 1, 2, 3].map(reader);
    // The forget is sent while the readers are reading: once each has finished a read.
    await eventually('readers running', async () => observed.length >= 4);
    const forget = await rt.api('POST', `/v1/subjects/${subject}/forget`, { token: writer, body: {} });
    acceptedAt = performance.now();
    expect(forget.status).toBe(202);
    await eventually('reads after the 202', async () => observed.filter((o) => o.startedAt > acceptedAt).length >= 20);
    stop = true;
    await Promise.all(readers);

    const after = observed.filter((o) => o.startedAt > acceptedAt);
    expect(after.length).toBeGreaterThanOrEqual(20);
    expect(after.flatMap((o) => o.leaked)).toEqual([]);
    const job = await settled(forget.body.jobId);
    expect(job.recordIds).toEqual(recordIds);
    expectVerifiedByReplays(job, recordIds.length);
  }, CASE_MS);

  it('no writer can make a deletion fail with identical content: the subject\'s own copy is residual, another subject\'s is never named', async () => {
    const fact = 'Ibis Freight pays its carriers by wire 4471';
    await write('twin-a', 'cust-ibis', fact);
    await write('twin-b', 'cust-ibis', fact);
    // Another principal writes the same bytes about another subject.
    const res = await rt.api('POST', '/v1/memories', { token: other, body: memory({ id: 'twin-elsewhere', subjectId: 'cust-jay', content: fact }) });
    expect(res.status, res.text).toBe(201);

    const job = await settled(await deleteOne('twin-a'));
    expectVerifiedByReplays(job, 1);
    expect(job.recordIds).toEqual(['twin-a']);
    expect(residualOf(job)).toEqual([{ recordId: 'twin-b', reason: 'identical_content' }]);
    expect(Number(probeCounts(job).residual)).toBe(1);
    expect(JSON.stringify(job)).not.toContain('twin-elsewhere');
    const receipt = await eventually('the receipt', async () => {
      const r = await rt.api('GET', `/v1/deletion-jobs/${job.jobId}/receipt`, { token: writer });
      return r.status === 200 ? r.body : undefined;
    }, SETTLE_MS);
    const payload = receipt.payload as { status: string; replay: { residual?: unknown } };
    expect(payload.status).toBe('verified');
    expect(payload.replay.residual).toEqual([{ recordId: 'twin-b', reason: 'identical_content' }]);
    expect(JSON.stringify(payload)).not.toContain('twin-elsewhere');
    // The other records are theirs: still there for their readers.
    expect(ids(await search('Ibis Freight carriers wire 4471', writer, { limit: 2 })).sort()).toEqual(['twin-b', 'twin-elsewhere']);
  }, CASE_MS);

  it('DELETE ?scope=content also deletes the subject\'s identical records the requester may delete, and no other', async () => {
    const fact = 'Jacana Labs keeps its spare keys in locker 8812';
    await write('same-1', 'cust-jacana', fact);
    await write('same-2', 'cust-jacana', fact);
    await write('differs', 'cust-jacana', 'Jacana Labs opens at nine');
    // dora's private record of the same subject and content: alice's capability may not delete it.
    const res = await rt.api('POST', '/v1/memories', { token: other, body: memory({ id: 'same-dora', subjectId: 'cust-jacana', content: fact, visibility: 'private' }) });
    expect(res.status, res.text).toBe(201);

    const bad = await rt.api('DELETE', '/v1/memories/same-1?scope=everything', { token: writer });
    expect(bad.status).toBe(422);
    expect(bad.body.code).toBe('MEM_VALIDATION');
    expect((await rt.api('GET', '/v1/memories/same-1', { token: writer })).status).toBe(200);

    const accepted = await rt.api('DELETE', '/v1/memories/same-1?scope=content', { token: writer });
    expect(accepted.status, accepted.text).toBe(202);
    const job = await settled(accepted.body.jobId);
    expectVerifiedByReplays(job, 2);
    expect([...(job.recordIds ?? [])].sort()).toEqual(['same-1', 'same-2']);
    expect(residualOf(job)).toEqual([]);
    expect(JSON.stringify(job)).not.toContain('same-dora');
    for (const id of ['same-1', 'same-2']) expect((await rt.api('GET', `/v1/memories/${id}`, { token: writer })).status).toBe(404);
    expect((await rt.api('GET', '/v1/memories/differs', { token: writer })).status).toBe(200);
    expect(ids(await search('Jacana Labs spare keys locker 8812', other, { limit: 1 }))).toEqual(['same-dora']);
  }, CASE_MS);

  it('keeps a job unverified while a copy survives under another id, naming only ids, and verifies once it is gone', async () => {
    await write('ghost-src', 'cust-wren', 'Wren Analytics pays its invoices through escrow 3307');
    const original = await rt.index.get('acme', 'ghost-src');
    if (!original) throw new Error('the record was not indexed');
    // A stray replica the index-builder knows nothing about: same bytes, another id.
    await rt.index.upsert([{ ...original, recordId: 'ghost-copy' }]);
    const job = await deleteOne('ghost-src');
    expect(ids(await search('Wren Analytics escrow 3307'))).toEqual([]);
    const stuck = await eventually('verification finding the stray copy', async () => {
      const res = await rt.api('GET', `/v1/deletion-jobs/${job}`, { token: writer });
      const progress = res.body.progress as { findings?: string[] } | undefined;
      return progress?.findings?.includes('index:ghost-copy') ? res.body : undefined;
    }, SETTLE_MS);
    expect(stuck.status).toBe('verifying');
    expect(JSON.stringify(stuck)).not.toContain('Wren');
    expect(Number(probeCounts(stuck).findings)).toBeGreaterThan(0);
    await rt.index.remove('acme', ['ghost-copy']);
    // The next replays (and, for a summary rebuilt from the stray copy, the summary task sent
    // again with them, design §8.3) find nothing once it is gone.
    expectVerifiedByReplays(await settled(job), 1);
  }, CASE_MS);

  more?.(() => ({ rt, writer, settled, expectVerifiedByReplays }));

  it('indexes the summary of a subject whose ids are as long as their grammar allows, and a forget takes it', async () => {
    // Maximal legal ids (contracts primitives.ts): tenant 64, resource, principal and subject 128.
    // A summary's document id names tenant, partition (resource and owner) and subject: it must
    // stay within Elasticsearch's 512-byte _id limit, or the subject's summary never exists and
    // its forget cannot verify (design §4).
    const long = (head: string) => `${head}${'-x:y@z.'.repeat(19)}`.slice(0, 128);
    const tenant = `t${'n'.repeat(63)}`;
    const resource = { kind: 'workspace', id: long('ws') } as const;
    const subjectId = long('subject');
    const token = await rt.issue({ tenant, agentId: long('agent'), principal: { id: long('person'), kind: 'person' }, scopes: [resource] });
    for (const [id, content] of [['tern-1', 'Tern Shipping pays by wire.'], ['tern-2', 'Tern Shipping meets on Mondays.']]) {
      const res = await rt.api('POST', '/v1/memories', { token, body: memory({ id, subjectId, resource, visibility: 'private', content }) });
      expect(res.status, res.text).toBe(201);
    }
    const summary = () => rt.api<{ items: Array<{ derivedFrom: string[]; text: string }> }>('GET', `/v1/subjects/${subjectId}/summary`, { token });
    const built = await eventually('the long subject\'s summary', async () => {
      const items = (await summary()).body.items;
      return items[0]?.derivedFrom.length === 2 ? items : undefined;
    }, SETTLE_MS);
    expect(built[0]?.text).toContain('Tern Shipping');
    const forget = await rt.api('POST', `/v1/subjects/${subjectId}/forget`, { token, body: {} });
    expect(forget.status, forget.text).toBe(202);
    const job = await eventually('the long subject\'s forget settled', async () => {
      const res = await rt.api('GET', `/v1/deletion-jobs/${String(forget.body.jobId)}`, { token });
      if (res.body.status === 'verified' || res.body.status === 'failed') return res.body;
      if ((res.body.progress as { nextVerificationAt?: string } | undefined)?.nextVerificationAt !== undefined) await rt.advance(100);
      return undefined;
    }, SETTLE_MS);
    expect(job.status, JSON.stringify({ failureReason: job.failureReason, evidence: job.evidence })).toBe('verified');
    expect(job.evidence?.find((e) => e.target === 'summary')).toMatchObject({ status: 'done' });
    expect((await summary()).body.items).toEqual([]);
  }, CASE_MS);

  it('keeps deleted content out of logs and out of the job\'s evidence', async () => {
    const jobs = (await rt.state.jobs.open()).length;
    expect(jobs).toBe(0);
    const forbidden = ['Wren', 'escrow', 'Osprey', 'Heron Logistics', 'Plover', 'Kestrel', 'Egret Studios', 'pit lane', 'lantern', 'gate code 5521', 'owes 9120', 'Killdeer', 'Stilt Robotics', 'Ibis Freight', 'Jacana Labs', 'locker 8812', 'Tern Shipping'];
    for (const line of rt.logs.lines) for (const word of forbidden) expect(line).not.toContain(word);
  }, CASE_MS);
});
