/**
 * `pnpm bench:profile-ingest [batch|async] [seconds=15] [embedded|distributed]`: one runtime under
 * the bench's ingest load (batch: 4 clients × 500 items; async: 64 clients), printing admitted
 * writes/s and the probe's write→searchable p95 — a quick A/B of a change to the write path.
 * The embedded runtime runs in this process, so it can be profiled:
 * `node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/profile-ingest.ts batch 15`
 * writes a .cpuprofile per thread (the HTTP edge, the pipeline, the embedding model). The
 * distributed one is the eight-process stack on the engines of the env (or infra/local).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { startStack } from '@gm/distributed';
import { loadConfig, startEmbeddedRuntime } from '@gm/embedded';
import { issueToken, type HttpTarget } from './administration.ts';
import { measureAsync, measureBatch } from './ingest.ts';

const load = process.argv[2] ?? 'batch';
const seconds = Number(process.argv[3] ?? 15);
const runtimeName = process.argv[4] ?? 'embedded';
if (load !== 'batch' && load !== 'async') throw new Error(`load must be batch or async, not ${load}`);
if (runtimeName !== 'embedded' && runtimeName !== 'distributed') throw new Error(`runtime must be embedded or distributed, not ${runtimeName}`);
if (!(seconds > 0)) throw new Error('seconds must be a positive number');

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-prof-'));
const limits = { MEMORY_RATE_LIMIT_PER_MINUTE: '1000000' };
let target: HttpTarget;
let stop: () => Promise<void>;
if (runtimeName === 'embedded') {
  const runtime = await startEmbeddedRuntime(loadConfig({ ...process.env, ...limits, MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'error' }));
  target = { url: runtime.url, issuerCredential: runtime.credentials.issuerCredential };
  stop = () => runtime.close();
} else {
  const stack = await startStack({ dataDir, port: 0, namespace: `prof-${randomBytes(4).toString('hex')}`, env: limits });
  target = { url: stack.url, issuerCredential: readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim() };
  stop = () => stack.stop();
}
try {
  const token = await issueToken(target, 'acme', ['write', 'search', 'read']);
  const probeToken = await issueToken(target, 'acme-probe', ['write', 'search', 'read']);
  if (load === 'batch') await measureBatch(target, token, probeToken, seconds, runtimeName);
  else await measureAsync(target, token, probeToken, seconds, runtimeName);
} finally {
  await stop();
  rmSync(dataDir, { recursive: true, force: true });
}
