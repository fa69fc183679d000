/**
 * `pnpm bench:profile [writes=2000] [writers=8]`: the embedded runtime in this process under
 * `writers` concurrent HTTP writers, printing admitted writes/s and the p50 latency. Made to be
 * profiled: `node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/profile-writes.ts 3000 8`
 * writes a .cpuprofile of the whole runtime (API, every consumer, SQLite) under that load.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, startEmbeddedRuntime } from '@gm/embedded';
import { issueToken } from './http-probe.ts';
const total = Number(process.argv[2] ?? 2000);
const conc = Number(process.argv[3] ?? 8);
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-prof-'));
const runtime = await startEmbeddedRuntime(loadConfig({ MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'warn', MEMORY_RATE_LIMIT_PER_MINUTE: '1000000' }));
const token = await issueToken({ url: runtime.url, issuerCredential: runtime.credentials.issuerCredential }, 'acme');
let n = 0; const lat: number[] = [];
const t0 = performance.now();
await Promise.all(Array.from({ length: conc }, async () => {
  while (n < total) {
    const i = n++;
    const s = performance.now();
    const res = await fetch(`${runtime.url}/v1/memories`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ subjectId: `subj-${i % 50}`, resource: { kind: 'project', id: 'maple' }, kind: 'fact', trust: 'trusted', content: `harbor invoice lisbon ${i} email renewal`, provenance: [{ source: 'user', observedAt: new Date().toISOString() }] }) });
    await res.text(); if (res.status !== 201) throw new Error(String(res.status));
    lat.push(performance.now() - s);
  }
}));
const wall = performance.now() - t0;
lat.sort((a, b) => a - b);
console.log(`${total} writes, ${conc} writers: ${(total / wall * 1000).toFixed(1)}/s p50 ${lat[Math.floor(lat.length / 2)]?.toFixed(2)} ms`);
await runtime.close();
rmSync(dataDir, { recursive: true, force: true });
