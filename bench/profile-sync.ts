/**
 * `pnpm bench:profile-sync [writes=400] [writers=8]`: the distributed stack (startStack, on the
 * engines of the env or infra/local) under `writers` concurrent synchronous HTTP writers, each
 * answered after read-your-writes, printing admitted writes/s and the CPU ms per write of every
 * service and local engine (/proc) — a quick A/B of a change to the synchronous write path
 * (docs/sizing.md). Forty writes warm the stack up first and are not counted.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { startStack } from '@gm/distributed';
import { issueToken } from './administration.ts';
import { writeBody } from './http-probe.ts';
import { sampleCpu } from './cpu.ts';
import { stackProcesses } from './idle.ts';
import { resolveEngines } from './engines.ts';
import { sweepNamespace } from './cleanup.ts';

const total = Number(process.argv[2] ?? 400);
const writers = Number(process.argv[3] ?? 8);
if (!(Number.isInteger(total) && total > 0 && Number.isInteger(writers) && writers > 0)) {
  throw new Error('usage: pnpm bench:profile-sync [writes] [writers], both positive whole numbers');
}
const WARM_UP_WRITES = 40;

const engines = await resolveEngines();
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-profile-sync-'));
const namespace = `ps-${randomBytes(4).toString('hex')}`;
const stack = await startStack({ dataDir, port: 0, namespace, env: { MEMORY_RATE_LIMIT_PER_MINUTE: '1000000' } });
try {
  const target = { url: stack.url, issuerCredential: readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim() };
  const token = await issueToken(target, 'acme', ['write', 'search', 'read']);
  const write = async (i: number): Promise<void> => {
    const res = await fetch(`${stack.url}/v1/memories`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(writeBody(`harbor invoice lisbon ${i} email renewal`, `subj-${i % 50}`)),
    });
    await res.text();
    if (res.status !== 201) throw new Error(`write answered ${res.status}`);
  };
  // The first writes of a stack create its indexes, keys and connections.
  for (let i = 0; i < WARM_UP_WRITES; i += 1) await write(total + i);
  const sample = sampleCpu(stackProcesses(stack));
  const started = performance.now();
  await Promise.all(Array.from({ length: writers }, async (_, lane) => {
    for (let i = lane; i < total; i += writers) await write(i);
  }));
  const ms = performance.now() - started;
  const perWrite = sample.stop().map((r) => ({ name: r.name, ms: ((r.cpuPercent / 100) * ms) / total }));
  const sum = perWrite.reduce((s, r) => s + (r.ms || 0), 0);
  console.log(`${total} writes by ${writers} writers: ${((total / ms) * 1000).toFixed(1)} writes/s, ${sum.toFixed(1)} CPU ms per write: ${perWrite.map((r) => `${r.name} ${r.ms.toFixed(1)}`).join(', ')}`);
} finally {
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
  // Indices left behind keep refreshing on their interval and inflate the next run's figures.
  const problems = (await sweepNamespace(engines, namespace)).filter((note) => note.includes('FAILED'));
  if (problems.length > 0) console.error(`cleanup of ${namespace}: ${problems.join('; ')}`);
}
