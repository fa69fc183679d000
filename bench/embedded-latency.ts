/**
 * Hand-run latency probe of the embedded runtime over HTTP (not a test: no thresholds).
 * Usage: pnpm bench:embedded [writes=300] [searches=300]
 * Prints a table and writes bench-results/embedded-latency.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, startEmbeddedRuntime } from '@gm/embedded';
import { issueToken } from './administration.ts';

const writes = Number(process.argv[2] ?? 300);
const searches = Number(process.argv[3] ?? 300);
const WORDS = ['kestrel', 'harbor', 'invoice', 'lisbon', 'email', 'renewal', 'quota', 'ticket', 'refund', 'shipping', 'priority', 'contract'];

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};
const summary = (xs: number[]) => ({ n: xs.length, p50: pct(xs, 50), p95: pct(xs, 95), p99: pct(xs, 99), mean: xs.reduce((a, b) => a + b, 0) / xs.length });

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-bench-'));
const t0 = performance.now();
const runtime = await startEmbeddedRuntime(
  loadConfig({ MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'warn', MEMORY_RATE_LIMIT_PER_MINUTE: '1000000' }),
);
const startMs = performance.now() - t0;
const post = async (route: string, token: string, body: unknown) => {
  const started = performance.now();
  const res = await fetch(`${runtime.url}${route}`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body),
  });
  await res.text();
  if (res.status >= 300) throw new Error(`${route} answered ${res.status}`);
  return performance.now() - started;
};
const token = await issueToken({ url: runtime.url, issuerCredential: runtime.credentials.issuerCredential }, 'acme');

const writeMs: number[] = [];
for (let i = 0; i < writes; i += 1) {
  const content = Array.from({ length: 12 }, (_, j) => WORDS[(i * 7 + j * 3) % WORDS.length]).join(' ') + ` record ${i}`;
  writeMs.push(await post('/v1/memories', token, {
    subjectId: `subj-${i % 50}`, resource: { kind: 'project', id: 'maple' }, kind: 'fact', trust: 'trusted', content,
    provenance: [{ source: 'user', observedAt: new Date().toISOString() }],
  }));
}
const searchMs: number[] = [];
for (let i = 0; i < searches; i += 1) {
  // distinct queries so the retrieval cache does not answer
  searchMs.push(await post('/v1/search', token, { query: `${WORDS[i % WORDS.length]} ${WORDS[(i * 5) % WORDS.length]} record ${i}`, limit: 10 }));
}
await runtime.close();
rmSync(dataDir, { recursive: true, force: true });

const result = { at: new Date().toISOString(), node: process.version, startMs, write: summary(writeMs), search: summary(searchMs) };
const fmt = (n: number) => n.toFixed(1).padStart(7);
process.stdout.write(
  [
    `embedded runtime start (in-process, empty data dir): ${startMs.toFixed(0)} ms`,
    'path        n      p50     p95     p99    mean  (ms, HTTP round trip, read-your-writes included)',
    `write  ${String(result.write.n).padStart(6)} ${fmt(result.write.p50)} ${fmt(result.write.p95)} ${fmt(result.write.p99)} ${fmt(result.write.mean)}`,
    `search ${String(result.search.n).padStart(6)} ${fmt(result.search.p50)} ${fmt(result.search.p95)} ${fmt(result.search.p99)} ${fmt(result.search.mean)}`,
    '',
  ].join('\n'),
);
mkdirSync('bench-results', { recursive: true });
writeFileSync('bench-results/embedded-latency.json', JSON.stringify(result, null, 2));
