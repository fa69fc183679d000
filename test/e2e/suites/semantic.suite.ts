/**
 * Semantic retrieval (§6.7), on both runtimes with the real embedding model: a paraphrase
 * finds a record that shares none of its words, both legs of a hybrid search stay inside the
 * asker's partitions (the nearest neighbour in another one is never returned, nor even
 * queried: the query audit shows what each index was asked), a caller's own embedding is
 * accepted only from the runtime's model, for a search and for a write (whose own vector is
 * indexed instead of its content's), a consistency token waits for the vectors too, and a forget
 * removes the vector.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL_ID, sharedOnnxEmbeddingModel } from '@gm/embedding';
import { auditedQueries, eventually, memory, STARTUP_MS, type StartRuntime, type TestRuntime } from '../harness.ts';

const FACT = 'Customer 42 prefers email over phone calls';
const PARAPHRASE = 'the client would rather be contacted by e-mail';

export const semanticSuite = (start: StartRuntime) => describe('semantic retrieval (real model)', () => {
  let rt: TestRuntime;
  let maple: string;
  let maplemark: string;
  /** The index queries the audit logged from this line of the runtime's log on. */
  let auditFrom = 0;
  const queried = () => auditedQueries(rt.logs.lines, auditFrom);

  type Item = { recordId: string; rank: Record<string, unknown> };
  const search = async (token: string, body: Record<string, unknown>, headers: Record<string, string> = {}) => {
    const res = await rt.api('POST', '/v1/search', { token, body, headers });
    return { status: res.status, body: res.body as { items?: Item[]; code?: string; detail?: string } };
  };
  const ids = (items: Item[] | undefined) => (items ?? []).map((i) => i.recordId);
  /** Deletes the record as maple and waits for its job to end (verified or failed): the job. */
  const deletedAndFinished = async (id: string) => {
    const del = await rt.api('DELETE', `/v1/memories/${id}`, { token: maple });
    expect(del.status).toBe(202);
    return eventually('job verified', async () => {
      const res = await rt.api('GET', `/v1/deletion-jobs/${String(del.body.jobId)}`, { token: maple });
      return res.body.status === 'verified' || res.body.status === 'failed' ? res.body : undefined;
    }, 30_000);
  };

  beforeAll(async () => {
    rt = await start({ MEMORY_QUERY_AUDIT: 'on' });
    maple = await rt.issue({ agentId: 'support-bot', scopes: [{ kind: 'project', id: 'maple' }] });
    maplemark = await rt.issue({ agentId: 'mark-bot', scopes: [{ kind: 'project', id: 'maplemark' }] });
    const written = await rt.api('POST', '/v1/memories', { token: maple, body: memory({ id: 'sem-maple', subjectId: 'sem-42', content: FACT }) });
    expect(written.status).toBe(201);
    // Another team's record, word for word the paraphrase: the nearest neighbour of the query there is.
    const other = await rt.api('POST', '/v1/memories', {
      token: maplemark, body: memory({ id: 'sem-maplemark', subjectId: 'sem-42', resource: { kind: 'project', id: 'maplemark' }, content: PARAPHRASE }),
    });
    expect(other.status).toBe(201);
    await eventually('both vectors', async () => (await rt.vectors.count('acme')) >= 2, 30_000);
  }, STARTUP_MS);
  afterAll(async () => rt.close(), STARTUP_MS);

  it('finds a paraphrase that shares no word with the record, where a lexical search finds nothing', async () => {
    const lexical = await search(maple, { query: PARAPHRASE, mode: 'lexical' });
    expect(lexical.status).toBe(200);
    expect(ids(lexical.body.items)).toEqual([]);
    const hybrid = await search(maple, { query: PARAPHRASE });
    expect(ids(hybrid.body.items)).toEqual(['sem-maple']);
    // Explained: only the vector leg found it, at its similarity; no keyword matched the query, so
    // meaning led (weight 0.9), and the fused score is that weight times its leg's best (1).
    const rank = hybrid.body.items?.[0]?.rank ?? {};
    expect(rank).toMatchObject({ mode: 'hybrid', vectorRank: 1, lexical: 0, semanticWeight: 0.9 });
    expect(rank.lexicalRank).toBeUndefined();
    expect(rank.similarity).toBeGreaterThan(0.4);
    expect(rank.fused).toBeCloseTo(0.9, 6);
  });

  it('never returns the nearest neighbour from a partition the asker holds no grant for, on either leg', async () => {
    auditFrom = rt.logs.lines.length;
    // (Worded anew: the retrieval cache would answer the first test's query without asking the index.)
    for (const mode of ['semantic', 'hybrid'] as const) {
      const res = await search(maple, { query: `so ${PARAPHRASE}`, mode });
      expect(ids(res.body.items), mode).toEqual(['sem-maple']);
    }
    // The caller's own embedding of the other team's very content: still only its own partition answers.
    const model = await sharedOnnxEmbeddingModel();
    const [exact] = await model.embed([PARAPHRASE], 'query');
    const own = await search(maple, { query: 'anything', mode: 'semantic', embedding: { model: MODEL_ID, vector: Array.from(exact ?? []) } });
    expect(ids(own.body.items)).toEqual(['sem-maple']);
    // Both legs were asked inside the asker's partitions only, and the vector leg was asked at all.
    const asked = queried();
    expect(asked.some((q) => q.leg === 'vector')).toBe(true);
    expect(asked.some((q) => q.leg === 'keyword')).toBe(true);
    expect(asked.flatMap((q) => q.partitions).filter((p) => !p.includes('r:project:maple/'))).toEqual([]);
    // The other team finds its own record, and only it.
    expect(ids((await search(maplemark, { query: FACT, mode: 'semantic' })).body.items)).toEqual(['sem-maplemark']);
  });

  it('finds nothing for a query unrelated to anything stored (the similarity floor)', async () => {
    expect(ids((await search(maple, { query: 'volcanic basalt geology of Iceland', mode: 'semantic' })).body.items)).toEqual([]);
  });

  it('accepts a caller embedding only from the runtime model, at its dimensions', async () => {
    const wrongModel = await search(maple, { query: 'x', mode: 'semantic', embedding: { model: 'text-embedding-3-small', vector: Array(384).fill(0.1) } });
    expect(wrongModel.status).toBe(422);
    expect(wrongModel.body.code).toBe('MEM_VALIDATION');
    expect(wrongModel.body.detail).toContain(MODEL_ID);
    const wrongSize = await search(maple, { query: 'x', mode: 'semantic', embedding: { model: MODEL_ID, vector: [0.1, 0.2] } });
    expect(wrongSize.status).toBe(422);
    const zero = await search(maple, { query: 'x', mode: 'semantic', embedding: { model: MODEL_ID, vector: Array(384).fill(0) } });
    expect(zero.status).toBe(422);
    const lexicalWithVector = await search(maple, { query: 'x', mode: 'lexical', embedding: { model: MODEL_ID, vector: Array(384).fill(0.1) } });
    expect(lexicalWithVector.status).toBe(422);
    const badMode = await search(maple, { query: 'x', mode: 'fuzzy' });
    expect(badMode.status).toBe(422);
    expect(badMode.body.code).toBe('MEM_VALIDATION');
  });

  it('indexes a write\'s own embedding instead of its content\'s, finds it by that query vector, and forgets it with the record', async () => {
    const model = await sharedOnnxEmbeddingModel();
    // The vector of other words than the content: found by it, the writer's vector was indexed, not the content's.
    const [own] = await model.embed(['volcanic basalt geology of Iceland'], 'document');
    const vector = Array.from(own ?? []);
    const written = await rt.api('POST', '/v1/memories', {
      token: maple, body: memory({ id: 'sem-own', subjectId: 'sem-11', content: 'Customer 77 pays every invoice by bank transfer', embedding: { model: MODEL_ID, vector } }),
    });
    expect(written.status).toBe(201);
    const token = written.headers.get('consistency-token') ?? '';
    const byVector = await search(maple, { query: 'anything', mode: 'semantic', subjectId: 'sem-11', embedding: { model: MODEL_ID, vector } }, { 'consistency-token': token });
    expect(ids(byVector.body.items)).toEqual(['sem-own']);
    expect(Number(byVector.body.items?.[0]?.rank.similarity)).toBeCloseTo(1, 4);
    expect(ids((await search(maple, { query: 'how does customer 77 settle invoices', mode: 'semantic', subjectId: 'sem-11' })).body.items)).toEqual([]);

    const job = await deletedAndFinished('sem-own');
    expect(job.status).toBe('verified');
    expect(job.evidence?.find((e: { target: string }) => e.target === 'vector')).toMatchObject({ status: 'done', ref: expect.stringMatching(/remaining=0/) });
    expect(await rt.vectors.has('acme', 'sem-own')).toBe(false);
    expect(ids((await search(maple, { query: 'anything', mode: 'semantic', subjectId: 'sem-11', embedding: { model: MODEL_ID, vector } })).body.items)).toEqual([]);
  });

  it('refuses a write\'s embedding of another model, size or none at all with 422 and writes nothing; in a batch, that item alone', async () => {
    const refused: Array<[string, unknown]> = [
      ['sem-bad-model', { model: 'text-embedding-3-small', vector: Array(384).fill(0.1) }],
      ['sem-bad-size', { model: MODEL_ID, vector: [0.1, 0.2] }],
      ['sem-zero', { model: MODEL_ID, vector: Array(384).fill(0) }],
    ];
    for (const [id, embedding] of refused) {
      const res = await rt.api('POST', '/v1/memories', { token: maple, body: memory({ id, subjectId: 'sem-12', content: 'A note about pallets', embedding }) });
      expect(res.status, id).toBe(422);
      expect(res.body.code, id).toBe('MEM_VALIDATION');
      expect((await rt.api('GET', `/v1/memories/${id}`, { token: maple })).status, id).toBe(404);
    }
    const vector = Array(384).fill(0).map((_, i) => (i === 7 ? 1 : 0));
    const batch = await rt.api('POST', '/v1/memories:batch', {
      token: maple,
      body: { items: [
        memory({ id: 'sem-batch-ok', subjectId: 'sem-12', content: 'A note about crates', embedding: { model: MODEL_ID, vector } }),
        memory({ id: 'sem-batch-bad', subjectId: 'sem-12', content: 'A note about boxes', embedding: { model: 'other-model', vector } }),
      ] },
    });
    expect(batch.status).toBe(200);
    expect((batch.body as unknown as { items: Array<{ httpStatus: number }> }).items.map((i) => i.httpStatus)).toEqual([201, 422]);
    expect((await rt.api('GET', '/v1/memories/sem-batch-bad', { token: maple })).status).toBe(404);
  });

  it('lets a search with a consistency token see the vectors of the writes it names', async () => {
    const written = await rt.api('POST', '/v1/memories', {
      token: maple, body: memory({ id: 'sem-token', subjectId: 'sem-7', content: 'Invoices for the Oslo office are paid in Norwegian kroner' }),
    });
    const token = written.headers.get('consistency-token') ?? '';
    expect(token).not.toBe('');
    const res = await search(maple, { query: 'which currency does the Norway branch pay bills in', mode: 'semantic' }, { 'consistency-token': token });
    expect(res.status).toBe(200);
    expect(ids(res.body.items)).toContain('sem-token');
  });

  it('forgets the vector with the record: the receipt lists the vector target and a paraphrase finds nothing', async () => {
    const written = await rt.api('POST', '/v1/memories', {
      token: maple, body: memory({ id: 'sem-gone', subjectId: 'sem-9', content: 'The warehouse alarm code is changed every Monday' }),
    });
    const token = written.headers.get('consistency-token') ?? '';
    expect(ids((await search(maple, { query: 'how often is the security code of the storage building rotated', mode: 'semantic' }, { 'consistency-token': token })).body.items))
      .toContain('sem-gone');
    const job = await deletedAndFinished('sem-gone');
    expect(job.status).toBe('verified');
    const vector = job.evidence?.find((e) => e.target === 'vector');
    expect(vector?.status).toBe('done');
    const verification = job.evidence?.find((e) => e.target === 'verification');
    // The replays searched the vectors too: by id, with the content's own words and with paraphrases.
    expect(verification?.ref).toMatch(/vector_get=1;vector_phrase=[1-9]\d*;vector_paraphrase=[1-9]\d*/);
    expect(await rt.vectors.has('acme', 'sem-gone')).toBe(false);
    expect(ids((await search(maple, { query: 'how often is the security code of the storage building rotated', mode: 'semantic' })).body.items)).toEqual([]);
  });

  it('answers a semantic search with 422 where the runtime keeps no vectors, and searches lexically by default', async () => {
    const off = await start({ MEMORY_SEMANTIC: 'off' });
    try {
      const token = await off.issue({ agentId: 'support-bot' });
      await off.api('POST', '/v1/memories', { token, body: memory({ id: 'off-1', content: FACT }) });
      const semantic = await off.api('POST', '/v1/search', { token, body: { query: PARAPHRASE, mode: 'semantic' } });
      expect(semantic.status).toBe(422);
      expect(semantic.body.detail).toContain('MEMORY_SEMANTIC=off');
      // A write's own vector would be kept by nobody: refused, and nothing written.
      const withVector = await off.api('POST', '/v1/memories', { token, body: memory({ id: 'off-2', content: FACT, embedding: { model: MODEL_ID, vector: Array(384).fill(0.1) } }) });
      expect(withVector.status).toBe(422);
      expect(withVector.body.detail).toContain('MEMORY_SEMANTIC=off');
      expect((await off.api('GET', '/v1/memories/off-2', { token })).status).toBe(404);
      const plain = await off.api('POST', '/v1/search', { token, body: { query: 'email' } });
      expect(plain.body.items.map((i: { recordId: string }) => i.recordId)).toEqual(['off-1']);
      expect(Object.keys(plain.body.items[0]?.rank ?? {}).sort()).toEqual(['confidence', 'lexical', 'recency', 'score']);
      expect(await off.vectors.count('acme')).toBe(0);
    } finally {
      await off.close();
    }
  }, STARTUP_MS);
});
