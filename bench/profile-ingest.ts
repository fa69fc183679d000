/**
 * `pnpm bench:profile-ingest [batch|async] [seconds=15]`: the embedded runtime in this process
 * under the bench's ingest load (batch: 4 clients × 500 items; async: 64 clients), printing
 * admitted writes/s and the probe's write→searchable p95. Made to be profiled:
 * `node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/profile-ingest.ts batch 15`
 * writes a .cpuprofile per thread (the HTTP edge, the pipeline, the embedding model).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, startEmbeddedRuntime } from '@gm/embedded';
import { issueToken } from './http-probe.ts';
import { measureAsync, measureBatch } from './ingest.ts';

const load = process.argv[2] ?? 'batch';
const seconds = Number(process.argv[3] ?? 15);
if (load !== 'batch' && load !== 'async') throw new Error(`load must be batch or async, not ${load}`);
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-prof-'));
const runtime = await startEmbeddedRuntime(loadConfig({
  ...process.env, MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'error', MEMORY_RATE_LIMIT_PER_MINUTE: '1000000',
}));
const target = { url: runtime.url, issuerCredential: runtime.credentials.issuerCredential };
const token = await issueToken(target, 'acme', ['write', 'search', 'read']);
const probeToken = await issueToken(target, 'acme-probe', ['write', 'search', 'read']);
if (load === 'batch') await measureBatch(target, token, probeToken, seconds, 'embedded');
else await measureAsync(target, token, probeToken, seconds, 'embedded');
await runtime.close();
rmSync(dataDir, { recursive: true, force: true });
