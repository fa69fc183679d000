import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERASED_CONTENT, ERASED_CONTENT_HASH, MemoryEvent, TOPICS, type DeletionReceipt } from '@gm/contracts';
import { MODEL_DIMENSIONS, MODEL_ID } from '@gm/embedding';
import { filesHolding } from '../files.ts';
import { eventually, expectKeyEvidence, memory, STARTUP_MS, type StartRuntime, type TestRuntime } from '../harness.ts';

/** What each record's content reads as through a fresh reader of the log: its text, or ERASED_CONTENT. */
async function contentsInLog(rt: TestRuntime): Promise<Map<string, string[]>> {
  const reader = await rt.logReader();
  const seen = new Map<string, string[]>();
  const note = (id: string, content: string) => seen.set(id, [...(seen.get(id) ?? []), content]);
  try {
    for await (const message of reader.log.readAll(TOPICS.events)) {
      const event = MemoryEvent.parse(message.value);
      if (event.type === 'MemoryWritten') note(event.data.record.id, event.data.record.content);
      if (event.type === 'MemoryPromoted' && event.data.content !== undefined) note(event.data.id, event.data.content);
    }
  } finally {
    await reader.close();
  }
  return seen;
}

/** What a reader holding the keys sees of one subject's hashes on the log: every content hash and request fingerprint, by message. */
interface SeenHashes { type: string; recordId: string; contentHash?: string; requestHash?: string }
async function hashesInLog(rt: TestRuntime, subjectId: string): Promise<SeenHashes[]> {
  const reader = await rt.logReader();
  const seen: SeenHashes[] = [];
  type Loose = { type: string; data: { id?: string; contentHash?: string; record?: { id: string; contentHash?: string } }; metadata: { subjectId: string; requestHash?: string } };
  try {
    for (const topic of [TOPICS.commands, TOPICS.events]) {
      for await (const message of reader.log.readAll(topic)) {
        const { type, data, metadata } = message.value as Loose;
        if (metadata.subjectId !== subjectId) continue;
        const contentHash = data.record?.contentHash ?? data.contentHash;
        seen.push({
          type, recordId: data.record?.id ?? data.id ?? '',
          ...(contentHash === undefined ? {} : { contentHash }), ...(metadata.requestHash === undefined ? {} : { requestHash: metadata.requestHash }),
        });
      }
    }
  } finally {
    await reader.close();
  }
  return seen;
}

const sha256Hex = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** Unkeyed SHA-256 digests a key id could carry of a subject: of the id alone, and in the KEK-id encoding keys had before keyed ids. */
const plainSubjectDigests = (tenant: string, subject: string): string[] =>
  [subject, JSON.stringify(['gm.kek.v1', tenant, subject, 1])].flatMap((part) =>
    (['hex', 'base64', 'base64url'] as const).map((encoding) => createHash('sha256').update(part, 'utf8').digest(encoding)));

const masterKeyFile = (dir: string, name: string, keys: Record<string, string>, active: string): string => {
  const file = path.join(dir, name);
  writeFileSync(file, JSON.stringify({ active, keys }), { mode: 0o600 });
  return file;
};

/**
 * Crypto-shredding (§8.5) through the API of a running runtime (either kind): content is
 * sealed in the log, a forget or a delete destroys keys so nothing can decrypt those events,
 * replay rebuilds the same state, and the master key rotates without losing anything.
 */
/** A vector of the runtime's size whose numbers (digits of sines) are nothing else in the log. */
const OWN_VECTOR = Array.from({ length: MODEL_DIMENSIONS }, (_, i) => Math.sin(i + 1));

export const cryptoSuite = (start: StartRuntime) => describe('encryption at rest and crypto-shredding over the API', () => {
  let rt: TestRuntime;
  let writer: string;
  let reviewer: string;
  let admin: string;
  let tmp: string;
  /** Every content this suite wrote, by record id: none may ever appear in the raw log. */
  const written = new Map<string, string>();

  beforeAll(async () => {
    rt = await start();
    tmp = mkdtempSync(path.join(os.tmpdir(), 'gm-crypto-'));
    writer = await rt.issue({ agentId: 'support-bot', principal: { id: 'alice', kind: 'person' } });
    reviewer = await rt.issue({ agentId: 'review-desk', principal: { id: 'bob', kind: 'person' }, actions: ['review', 'promote', 'search', 'read'] });
    admin = await rt.issue({ agentId: 'compliance-desk', principal: { id: 'carol', kind: 'person' }, scopes: [{ kind: 'project', id: 'maple' }, { kind: 'tenant', id: 'acme' }], actions: ['admin', 'search', 'read'] });
  }, STARTUP_MS);
  afterAll(async () => {
    await rt?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  }, STARTUP_MS);

  const write = async (id: string, subjectId: string, content: string, extra: Record<string, unknown> = {}) => {
    const res = await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id, subjectId, content, ...extra }) });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    written.set(id, content);
    return res.body;
  };
  const read = async (id: string) => rt.api('GET', `/v1/memories/${id}`, { token: writer });
  const search = async (query: string) => (await rt.api('POST', '/v1/search', { token: writer, body: { query } })).body.items.map((i) => i.recordId).sort();
  const finished = (jobId: string) =>
    eventually(`job ${jobId} finished`, async () => {
      const res = await rt.api('GET', `/v1/deletion-jobs/${jobId}`, { token: admin });
      return res.body.status === 'verified' || res.body.status === 'failed' ? res.body : undefined;
    }, 60_000);
  const receiptOf = (jobId: string) =>
    eventually(`receipt of ${jobId}`, async () => {
      const res = await rt.api<{ payload: DeletionReceipt }>('GET', `/v1/deletion-jobs/${jobId}/receipt`, { token: admin });
      return res.status === 200 ? res.body.payload : undefined;
    }, 60_000);

  it('keeps every content out of the raw log: ids in clear, content sealed (commands, events, promotions, corrections)', async () => {
    await write('cr-a1', 'cust-crypt-a', 'Osprey account pays invoices by wire on Thursdays');
    await write('cr-a2', 'cust-crypt-a', 'Osprey prefers the Lisbon office for meetings');
    await write('cr-b1', 'cust-crypt-b', 'Bittern household keeps the spare key with neighbour Hollis');
    await write('cr-b2', 'cust-crypt-b', 'Bittern household pays the tutor in cash monthly');
    // A write with its own embedding: the vector is derived from the content, sealed with it.
    await write('cr-e1', 'cust-crypt-e', 'Eider farm waters the orchard at dawn', { embedding: { model: MODEL_ID, vector: OWN_VECTOR } });
    await write('cr-c1', 'cust-crypt-c', 'Curlew clinic notes a penicillin allergy', { trust: 'untrusted' });
    const promoted = await rt.api('POST', '/v1/memories/cr-c1/promote', { token: reviewer, body: { expectedVersion: 1 } });
    expect(promoted.status).toBe(200);
    await write('cr-a3', 'cust-crypt-a', 'Osprey account pays invoices by card from now on', { supersedesId: 'cr-a1' });
    // The correction replaced the first fact; the second stays.
    expect(await search('osprey invoices')).toEqual(['cr-a2', 'cr-a3']);
    expect((await read('cr-c1')).body.content).toBe('Curlew clinic notes a penicillin allergy');

    const raw = await rt.rawLog();
    // The control: the scan does read the log (ids, subjects and event types are in clear)...
    for (const visible of ['cr-a1', 'cr-b2', 'cr-c1', 'cust-crypt-b', 'MemoryWritten', 'MemoryPromoted', 'WriteMemory']) expect(raw).toContain(visible);
    // ...and no content, not even a distinctive fragment of one.
    for (const [id, content] of written) {
      expect(raw, id).not.toContain(content);
      expect(raw, id).not.toContain(content.split(' ').slice(1, 4).join(' '));
    }
    for (const word of ['Osprey', 'Hollis', 'penicillin', 'tutor']) expect(raw).not.toContain(word);
    // Nor any number of the embedding, as sent or as the edge normalised it (ten digits each).
    const digits = (x: number) => String(Math.abs(x)).slice(2, 12);
    const norm = Math.hypot(...OWN_VECTOR);
    for (const x of [...OWN_VECTOR.slice(0, 16), ...OWN_VECTOR.slice(0, 16).map((v) => v / norm)]) expect(raw).not.toContain(digits(x));

    // Through a reader that holds the master keys, every content opens again.
    const contents = await contentsInLog(rt);
    expect(contents.get('cr-b1')).toEqual([written.get('cr-b1')]);
    expect(contents.get('cr-c1')).toEqual(['Curlew clinic notes a penicillin allergy', 'Curlew clinic notes a penicillin allergy']);
  }, 120_000);

  it('forgets a subject by destroying its keys: no reader can decrypt its events, the receipt says purged, other subjects read on', async () => {
    const forget = await rt.api('POST', '/v1/subjects/cust-crypt-a/forget', { token: writer, body: {} });
    expect(forget.status).toBe(202);
    const job = await finished(String(forget.body.jobId));
    expect(job.status).toBe('verified');
    const receipt = await receiptOf(String(forget.body.jobId));
    expect(receipt).toMatchObject({ mode: 'forget', status: 'verified', retention: 'purged', eventLog: { holdsContent: false } });
    const key = receipt.targets.find((t) => t.target === 'key');
    // Three data keys and the subject's key-encryption key; four sealed events (three writes, none promoted), none opens.
    expect(key?.status).toBe('done');
    expectKeyEvidence(rt, key?.ref, 'data_keys=3;keks=1;keks_kept=0;events=3;undecryptable=3', 4);
    expect(JSON.stringify(receipt)).not.toContain('Osprey');

    const contents = await contentsInLog(rt);
    for (const id of ['cr-a1', 'cr-a2', 'cr-a3']) expect(contents.get(id), id).toEqual([ERASED_CONTENT]);
    expect(contents.get('cr-b1')).toEqual([written.get('cr-b1')]);
    expect(contents.get('cr-c1')?.[0]).toBe('Curlew clinic notes a penicillin allergy');
    expect((await read('cr-b2')).body.content).toBe(written.get('cr-b2'));
    expect(await search('osprey invoices')).toEqual([]);
  }, 120_000);

  it('gives a subject written again after its forget a new key: readable, and untouched by the old destruction', async () => {
    await write('cr-a4', 'cust-crypt-a', 'Osprey reopened the account with a new contact');
    expect((await read('cr-a4')).body.content).toBe('Osprey reopened the account with a new contact');
    const contents = await contentsInLog(rt);
    expect(contents.get('cr-a4')).toEqual(['Osprey reopened the account with a new contact']);
    expect(contents.get('cr-a1')).toEqual([ERASED_CONTENT]);
    expect(await rt.rawLog()).not.toContain('reopened the account');
  });

  it('deletes one record by destroying its data key only: the subject’s other record still decrypts and reads', async () => {
    const del = await rt.api('DELETE', '/v1/memories/cr-b1', { token: writer });
    expect(del.status).toBe(202);
    expect((await finished(String(del.body.jobId))).status).toBe('verified');
    const receipt = await receiptOf(String(del.body.jobId));
    expect(receipt).toMatchObject({ mode: 'delete', retention: 'purged', eventLog: { holdsContent: false } });
    expectKeyEvidence(rt, receipt.targets.find((t) => t.target === 'key')?.ref, 'data_keys=1;keks=0;keks_kept=0;events=1;undecryptable=1', 1);

    const contents = await contentsInLog(rt);
    expect(contents.get('cr-b1')).toEqual([ERASED_CONTENT]);
    expect(contents.get('cr-b2')).toEqual([written.get('cr-b2')]);
    expect((await read('cr-b2')).body.content).toBe(written.get('cr-b2'));
    expect(await search('bittern tutor cash')).toEqual(['cr-b2']);
  }, 120_000);

  it('replays the log after the forget and the delete to the same state: erased events stay erased', async () => {
    const { before, after } = await rt.replay();
    expect(after).toEqual(before);
    // Only the record written after the forget comes back.
    expect(await search('osprey invoices account')).toEqual(['cr-a4']);
    expect(await search('bittern tutor cash')).toEqual(['cr-b2']);
    expect((await read('cr-a2')).status).toBe(404);
    expect((await read('cr-a4')).body.content).toBe('Osprey reopened the account with a new contact');
  }, STARTUP_MS);

  it('keeps no plain hash of content on the log: the content hashes and request fingerprints are sealed with it and gone after a forget', async () => {
    const idempotent = (key: string) => ({ 'Idempotency-Key': key });
    const writeKeyed = async (id: string, content: string, extra: Record<string, unknown> = {}) => {
      const res = await rt.api('POST', '/v1/memories', { token: writer, headers: idempotent(`idem-${id}`), body: memory({ id, subjectId: 'cust-crypt-h', content, ...extra }) });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      written.set(id, content);
    };
    await writeKeyed('cr-h1', 'Heron family banks with the cooperative in Tours');
    // Promoted out of quarantine: the content travels with the promotion, its hash in the record.
    await writeKeyed('cr-h2', 'Heron family pays school fees each September', { trust: 'untrusted' });
    const promoted = await rt.api('POST', '/v1/memories/cr-h2/promote', { token: reviewer, headers: idempotent('idem-promote-h2'), body: { expectedVersion: 1 } });
    expect(promoted.status, JSON.stringify(promoted.body)).toBe(200);
    // A correction: the superseded record's event is content-free and carries no fingerprint.
    await writeKeyed('cr-h3', 'Heron family banks online with the cooperative now', { supersedesId: 'cr-h1' });

    // The control: a reader holding the keys gets every hash back, and they are the content's.
    const before = await hashesInLog(rt, 'cust-crypt-h');
    const contentHashes = new Set(['cr-h1', 'cr-h2', 'cr-h3'].map((id) => sha256Hex(written.get(id) ?? '')));
    expect(new Set(before.flatMap((m) => (m.contentHash === undefined ? [] : [m.contentHash])))).toEqual(contentHashes);
    expect(before.filter((m) => m.type === 'MemoryPromoted').map((m) => m.contentHash)).toEqual([sha256Hex(written.get('cr-h2') ?? '')]);
    // The writes' fingerprints hash their bodies, content included; the command's and its event's
    // are the same. (A promotion's hashes only `{expectedVersion}`: content-free, left in clear.)
    const ofWrites = (type: string) => new Set(before.filter((m) => m.type === type).map((m) => m.requestHash));
    const fingerprints = ofWrites('WriteMemory');
    expect(fingerprints.size).toBe(3);
    expect(ofWrites('MemoryWritten')).toEqual(fingerprints);
    expect(before.find((m) => m.type === 'MemorySuperseded')).toEqual({ type: 'MemorySuperseded', recordId: 'cr-h1' });
    const neverInClear = async () => {
      const raw = await rt.rawLog();
      expect(raw).toContain('cr-h2');
      for (const hash of [...contentHashes, ...fingerprints]) expect(raw).not.toContain(hash);
    };
    await neverInClear();

    const forget = await rt.api('POST', '/v1/subjects/cust-crypt-h/forget', { token: writer, body: {} });
    expect(forget.status).toBe(202);
    expect((await finished(String(forget.body.jobId))).status).toBe('verified');
    await neverInClear();
    // The events' keys are gone: no reader gets a hash of their content back, only the placeholder.
    const after = (await hashesInLog(rt, 'cust-crypt-h')).filter((m) => m.type === 'MemoryWritten' || m.type === 'MemoryPromoted');
    expect(after).toHaveLength(4);
    for (const m of after) expect(m, `${m.type} ${m.recordId}`).toEqual({ type: m.type, recordId: m.recordId, contentHash: ERASED_CONTENT_HASH });
  }, 120_000);

  it('rotates the master key without losing a record, and refuses to start on a wrong master key', async () => {
    const current = JSON.parse(readFileSync(rt.masterKeyFile(), 'utf8')) as { active: string; keys: Record<string, string> };
    const next = randomBytes(32).toString('base64');
    // 1. both keys, the new one active: the KEKs are re-wrapped with it at start.
    await rt.restartWith({ MEMORY_MASTER_KEY_FILE: masterKeyFile(tmp, 'both.json', { ...current.keys, next }, 'next') });
    await write('cr-d1', 'cust-crypt-d', 'Dunnock written under the rotated master key');
    // 2. the old key retired: everything still opens, from the projections and from the log.
    await rt.restartWith({ MEMORY_MASTER_KEY_FILE: masterKeyFile(tmp, 'next-only.json', { next }, 'next') });
    expect((await read('cr-b2')).body.content).toBe(written.get('cr-b2'));
    expect((await read('cr-d1')).body.content).toBe('Dunnock written under the rotated master key');
    const contents = await contentsInLog(rt);
    for (const id of ['cr-b2', 'cr-c1', 'cr-a4', 'cr-d1']) expect(contents.get(id)?.[0], id).toBe(written.get(id));
    const { before, after } = await rt.replay();
    expect(after).toEqual(before);

    // 3. a key that is not the one the data was sealed with: a clear refusal, nothing started.
    const wrong = masterKeyFile(tmp, 'wrong.json', { next: randomBytes(32).toString('base64') }, 'next');
    await expect(rt.restartWith({ MEMORY_MASTER_KEY_FILE: wrong })).rejects.toThrow(/MASTER_KEY_MISMATCH|cannot unwrap/);
    const lost = masterKeyFile(tmp, 'other-id.json', { other: randomBytes(32).toString('base64') }, 'other');
    await expect(rt.restartWith({ MEMORY_MASTER_KEY_FILE: lost })).rejects.toThrow(/not configured/);
    // Back on the right key, nothing was lost.
    await rt.restartWith({ MEMORY_MASTER_KEY_FILE: path.join(tmp, 'next-only.json') });
    expect((await read('cr-d1')).body.content).toBe('Dunnock written under the rotated master key');
  }, STARTUP_MS * 3);

  it('leaves no content, plain sha256 or provenance uri of a forgotten record on the raw log, in any value of the state store or in any file of the stores', async () => {
    const content = 'Ploverwick clinic schedules the biopsy for the ninth';
    const source = 'crm://patients/plover-5512/oncology';
    const sha = createHash('sha256').update(content, 'utf8').digest();
    const forms = [sha.toString('hex'), sha.toString('base64'), sha.toString('base64url')];
    // Receipts only once every copy erased its files: the distributed default, which the harness
    // shortens to 1 ms so that the other jobs do not wait up to 30 s for Elasticsearch's leases
    // (docs/deletion.md#erasure-on-disk). The embedded runtime's copies erase at once.
    if (rt.kind === 'distributed') await rt.restartWith({ MEMORY_ERASURE_MERGE_WAIT: '45s' });
    await write('cr-p1', 'cust-crypt-p', content, { provenance: [{ source: 'tool', uri: source, observedAt: '2026-11-30T07:00:00.000Z' }] });
    // A packet cites it (its provenance with it), and a cached result holds it.
    expect(await search('ploverwick biopsy')).toEqual(['cr-p1']);
    /** Every value the state store holds under the runtime's prefix (strings; the other types hold ids). */
    const stateValues = async () => (await rt.state.kv.mget(await rt.state.kv.keys(rt.state.keys.prefix))).filter((v) => v !== null).join('\n');
    /** Which files of the stores (embedded: the data directory; distributed: Redis's AOF/RDB, the Elasticsearch shards) hold a needle. */
    const inFiles = async (needles: ReadonlyArray<string | Buffer>) => filesHolding(await rt.storeFiles(), needles);
    // The controls: the scans read what they must (ids on the log; the record's hash and source in
    // the store; the words in the index's files and the hash and source in the state's)...
    expect(await rt.rawLog()).toContain('cr-p1');
    expect(await stateValues()).toContain(source);
    expect(await stateValues()).toContain(forms[0]);
    await eventually('the index and the state in their files', async () => ((await inFiles(['ploverwick'])).length > 0 && (await inFiles([source])).length > 0 && (await inFiles([forms[0] ?? ''])).length > 0) || undefined);
    // ...and the log never held the source in clear: it is sealed with the content.
    expect(await rt.rawLog()).not.toContain(source);

    const forget = await rt.api('POST', '/v1/subjects/cust-crypt-p/forget', { token: writer, body: {} });
    expect(forget.status).toBe(202);
    expect((await finished(String(forget.body.jobId))).status).toBe('verified');
    const receipt = await receiptOf(String(forget.body.jobId));
    expect(receipt.copies?.filter((c) => c.state !== 'erased')).toEqual([]);
    const raw = await rt.rawLog();
    const values = await stateValues();
    const needles = [content, source, 'plover-5512', ...forms];
    for (const needle of needles) {
      expect(raw, needle).not.toContain(needle);
      expect(values, needle).not.toContain(needle);
    }
    // As soon as the receipt is verified, no file of any store holds them either (§8.4).
    expect(await inFiles([...needles, sha, 'Ploverwick', 'ploverwick'])).toEqual([]);
    // The subject id stays only where docs/security.md lists it: no plain hash of it names a key
    // in the key store (keys.db, memory.keys), the purged id's claim no longer names it, and its
    // record index is gone once its last record is purged.
    const subjectDigests = plainSubjectDigests('acme', 'cust-crypt-p');
    for (const digest of subjectDigests) expect(raw, digest).not.toContain(digest);
    expect(await inFiles(subjectDigests)).toEqual([]);
    await eventually('the purge projected', async () => ((await rt.state.records.get('acme', 'cr-p1'))?.status === 'purged') || undefined);
    expect(await rt.state.idClaims.owner('acme', 'cr-p1')).not.toContain('cust-crypt-p');
    expect(await rt.state.records.idsOfSubject('acme', 'cust-crypt-p')).toEqual([]);
  }, STARTUP_MS + 120_000);
});
