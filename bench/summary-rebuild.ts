/**
 * Hand-run probe of what keeping summaries in step costs the index-builder per event (§6.8):
 * `holding` + one scope rebuild (record hash read, the ranked pages of each purpose, build, replace), on the
 * embedded SQLite stores, for subjects with 1, 10, 50 and 500 active facts. Not a test: no thresholds.
 * Usage: node --import tsx bench/summary-rebuild.ts [rounds=200]
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { RecordMeta } from '@gm/contracts';
import { rebuildSummaries, toIndexDocument } from '@gm/index-builder';
import { createSqliteSearchIndex, createSqliteSummaryStore } from '@gm/search-index';
import { StateStore, createSqliteKeyValueStore } from '@gm/state-store';

const rounds = Number(process.argv[2] ?? 200);
const dir = mkdtempSync(path.join(os.tmpdir(), 'gm-bench-summaries-'));
const index = createSqliteSearchIndex({ file: path.join(dir, 'index.db') });
const summaries = createSqliteSummaryStore({ file: path.join(dir, 'summaries.db') });
const kv = createSqliteKeyValueStore({ file: path.join(dir, 'state.db') });
const state = new StateStore(kv);
const deps = { index, summaries, state };
const now = new Date().toISOString();
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

const meta = (subjectId: string, i: number, content: string): RecordMeta => ({
  id: `${subjectId}-r${i}`, tenantId: 'bench', agentId: 'agent', subjectId, owner: { principalId: 'alice', kind: 'person' },
  resource: { kind: 'project', id: 'maple' }, visibility: 'team', sensitivity: 'normal', purposes: ['support'], kind: 'fact',
  contentHash: sha(content), provenance: [{ source: 'user', observedAt: now }], trust: 'trusted', confidence: (i % 10) / 10,
  createdAt: new Date(Date.now() - i * 60_000).toISOString(), expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
  version: 1, status: 'active', policyRevision: 1,
});

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? 0;
try {
  console.log('facts/subject  p50 ms  p95 ms  (holding + rebuild of one (partition, subject), SQLite)');
  for (const facts of [1, 10, 50, 500]) {
    const subjectId = `subject-${facts}`;
    const metas = Array.from({ length: facts }, (_, i) => meta(subjectId, i, `Fact ${i} about ${subjectId}: the customer prefers option ${i}. More detail follows here.`));
    for (const m of metas) await state.records.put(m);
    await index.upsert(metas.map((m, i) => toIndexDocument(m, `Fact ${i} about ${subjectId}: the customer prefers option ${i}. More detail follows here.`)));
    const scope = { partition: toIndexDocument(metas[0] as RecordMeta, '').partition, subjectId };
    const times: number[] = [];
    for (let r = 0; r < rounds; r += 1) {
      const started = performance.now();
      await summaries.holding('bench', [metas[0]?.id ?? '']);
      await rebuildSummaries(deps, 'bench', [scope], now);
      times.push(performance.now() - started);
    }
    console.log(`${String(facts).padStart(13)}  ${pct(times, 50).toFixed(3).padStart(6)}  ${pct(times, 95).toFixed(3).padStart(6)}`);
  }
} finally {
  await index.close();
  await summaries.close();
  await kv.close();
  rmSync(dir, { recursive: true, force: true });
}
