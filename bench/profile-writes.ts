/**
 * `pnpm bench:profile [writes=2000] [writers=8] [records]`: the embedded runtime in this process
 * under `writers` concurrent HTTP writers, printing admitted writes/s and the p50 latency. With
 * `records`, the writes cycle over that many record ids, updating each (expected version tracked
 * here) once it exists — the soak's load. Made to be profiled:
 * `node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/profile-writes.ts 3000 8` writes a
 * .cpuprofile of the whole runtime (API, every consumer, SQLite) under that load.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, startEmbeddedRuntime } from '@gm/embedded';
import { issueToken } from './administration.ts';
import { writeBody } from './http-probe.ts';

const total = Number(process.argv[2] ?? 2000);
const writers = Number(process.argv[3] ?? 8);
const records = process.argv[4] === undefined ? undefined : Number(process.argv[4]);
/** Settings taken from the environment, for A/B runs (`MEMORY_SEMANTIC=off pnpm bench:profile`). */
const passedThrough = (...names: string[]): Record<string, string> =>
  Object.fromEntries(names.flatMap((name) => (process.env[name] === undefined ? [] : [[name, process.env[name]]])));
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-prof-'));
const runtime = await startEmbeddedRuntime(loadConfig({ MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'warn', MEMORY_RATE_LIMIT_PER_MINUTE: '1000000', ...passedThrough('MEMORY_PIPELINE', 'MEMORY_SEMANTIC') }));
const token = await issueToken({ url: runtime.url, issuerCredential: runtime.credentials.issuerCredential }, 'acme');
const versions = new Map<string, number>();
const latencies: number[] = [];
const started = performance.now();
await Promise.all(Array.from({ length: writers }, async (_, lane) => {
  for (let n = 0; lane + n * writers < total; n += 1) {
    const i = lane + n * writers;
    // Each lane owns its ids (i % writers), so concurrent updates never conflict.
    const id = records === undefined ? undefined : `rec-${i % records}`;
    const expectedVersion = id === undefined ? undefined : versions.get(id) ?? 0;
    const sent = performance.now();
    const res = await fetch(`${runtime.url}/v1/memories`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...writeBody(`harbor invoice lisbon ${i} email renewal`, `subj-${i % 50}`, id), ...(expectedVersion === undefined ? {} : { expectedVersion }) }),
    });
    const body = (await res.json()) as { version?: number };
    if (res.status !== 201) throw new Error(`write answered ${res.status}`);
    if (id !== undefined && body.version !== undefined) versions.set(id, body.version);
    latencies.push(performance.now() - sent);
  }
}));
const wallMs = performance.now() - started;
latencies.sort((a, b) => a - b);
process.stdout.write(`${total} writes, ${writers} writers${records === undefined ? '' : `, ${records} records`}: ${((total / wallMs) * 1000).toFixed(1)}/s, p50 ${latencies[Math.floor(latencies.length / 2)]?.toFixed(2)} ms\n`);
await runtime.close();
rmSync(dataDir, { recursive: true, force: true });
