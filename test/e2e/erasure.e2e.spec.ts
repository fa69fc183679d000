import { createHash } from 'node:crypto';
import { rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesHolding, filesUnder } from './files.ts';
import { eventually, memory, startTestRuntime, STARTUP_MS, type EmbeddedTestRuntime } from './harness.ts';

/**
 * Erasure that is physically true on the embedded runtime (design §8.4, §8.5): after a verified
 * forget, no file of the data directory — the write-ahead logs and shared-memory files included —
 * holds a byte of the forgotten content, its plain sha256 (a plain hash of content is content) or
 * its provenance (which is about the subject too), while the runtime runs and after a clean
 * shutdown; and the directory is its owner's only.
 */
describe('erasure on disk (embedded data directory)', () => {
  let rt: EmbeddedTestRuntime;
  let closed = false;
  // Distinctive words that no tokenizer stems or splits: the index keeps terms, the summaries lines.
  const CANARY = 'Quokkabond vexillary 7731 zumbrota stays at Ostrovia Lane';
  const WORDS = ['Quokkabond', 'quokkabond', 'vexillary', 'zumbrota', 'ostrovia'];
  const SOURCE = 'crm://patients/quokkabond-7731/oncology';
  // The content's sha256 in every form a store could keep it: hex, base64, base64url and raw bytes.
  const sha = createHash('sha256').update(CANARY, 'utf8').digest();
  const DIGESTS = [sha.toString('hex'), sha.toString('base64'), sha.toString('base64url')];

  beforeAll(async () => {
    rt = await startTestRuntime();
  }, STARTUP_MS);
  afterAll(async () => {
    if (!closed) await rt.close();
    else rmSync(rt.dataDir, { recursive: true, force: true });
  });

  const holding = (needles: ReadonlyArray<string | Buffer>): string[] => filesHolding(filesUnder(rt.dataDir), needles, rt.dataDir);
  /** Everything of the forgotten record that must leave the files: content, words, sha256 (hex, base64, base64url, raw), provenance. */
  const FORGOTTEN = [CANARY, ...WORDS, ...DIGESTS, sha, SOURCE];

  it('leaves no byte of a forgotten record in any file, and says so in the receipt, copy by copy', async () => {
    const writer = await rt.issue({ agentId: 'support-bot', principal: { id: 'alice', kind: 'person' } });
    const provenance = [{ source: 'tool', uri: SOURCE, observedAt: '2026-11-30T07:00:00.000Z' }];
    const write = await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'canary-1', subjectId: 'cust-canary', kind: 'fact', content: CANARY, provenance }) });
    expect(write.status).toBe(201);
    // Every copy made: the index (search), an evidence packet and a cache entry (the search), the summary.
    const found = await rt.api('POST', '/v1/search', { token: writer, body: { query: 'quokkabond vexillary' } });
    expect(found.body.items.map((i) => i.recordId)).toEqual(['canary-1']);
    await eventually('the subject summarised', async () => {
      const res = await rt.api('GET', '/v1/subjects/cust-canary/summary', { token: writer });
      return (res.body.items as unknown[]).length > 0 ? true : undefined;
    });
    // write-admission's snapshot of the subject too: a clean stop stores every state, and the
    // periodic snapshot comes only after the forget (that is where a rewrite used to stay in the WAL).
    await rt.restart();
    // Kept under a keyed pseudonym of the subject (docs/security.md): found by what it holds.
    const stateKeys = await rt.state.kv.keys(rt.state.keys.admissionState('acme/'));
    expect(stateKeys.filter((k) => k.includes('cust-canary'))).toEqual([]);
    const snapshot = (await rt.state.admission.load(stateKeys.map((k) => k.slice(rt.state.keys.admissionState('').length))))
      .find((s) => JSON.stringify(s?.state).includes('canary-1'));
    expect(JSON.stringify(snapshot?.state)).toContain('canary-1');
    // It never holds a plain hash: the content's hash and the request fingerprint are sealed under the subject's key (§8.5).
    for (const digest of DIGESTS) expect(JSON.stringify(snapshot?.state)).not.toContain(digest);
    // The copies are in the files now (the test would prove nothing otherwise).
    expect(holding(WORDS).length).toBeGreaterThan(0);
    expect(holding(DIGESTS).length).toBeGreaterThan(0);
    expect(holding([SOURCE]).length).toBeGreaterThan(0);

    const forget = await rt.api('POST', '/v1/subjects/cust-canary/forget', { token: writer, body: {} });
    expect(forget.status).toBe(202);
    const receipt = await eventually('the verified receipt', async () => {
      const res = await rt.api<{ payload: { status: string; retention: string; copies?: Array<{ copy: string; state: string }>; targets: Array<{ target: string; ref: string }> } }>(
        'GET', `/v1/deletion-jobs/${String(forget.body.jobId)}/receipt`, { token: writer });
      return res.status === 200 ? res.body.payload : undefined;
    }, 30_000);
    expect(receipt).toMatchObject({ status: 'verified', retention: 'purged' });
    expect(receipt.copies?.map((c) => `${c.copy}:${c.state}`).sort()).toEqual(['index:erased', 'state:erased', 'summaries:erased', 'vectors:erased']);
    // The subject's key went too: the key sealing write-admission's snapshot kept no key alive.
    expect(receipt.targets.find((t) => t.target === 'key')?.ref).toContain('keks=1;keks_kept=0');

    // While the runtime runs, as soon as the receipt is verified (nor the content's plain sha256,
    // with which anyone could confirm a guess, nor its provenance: §8.5)…
    expect(holding(FORGOTTEN)).toEqual([]);
    // The subject id stays only where docs/security.md lists it (the job, its receipt, the log):
    // once the purge is projected, no key of the state store names it.
    const naming = async () => (await rt.state.kv.keys(rt.state.keys.prefix)).filter((k) => k.includes('cust-canary'));
    await eventually('the purge projected', async () => ((await naming()).length === 0 ? true : undefined));
    // …and after a clean shutdown (closing stores write-admission's states and checkpoints the logs into the files).
    await rt.runtime.close();
    closed = true;
    expect(holding(FORGOTTEN)).toEqual([]);
  }, 60_000);

  it('keeps the data directory its owner\'s only: the directory 0700, every file 0600', () => {
    expect(statSync(rt.dataDir).mode & 0o777).toBe(0o700);
    const loose = filesUnder(rt.dataDir).filter((file) => (statSync(file).mode & 0o777) !== 0o600).map((file) => path.relative(rt.dataDir, file));
    expect(loose).toEqual([]);
  });
});
