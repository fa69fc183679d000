/**
 * Hand-run probe of revocation convergence (§7; not a test, no thresholds): for N fresh
 * capabilities, revoke each through the API and time (a) the revoke request itself (produce on
 * policy.changes + wait for the policy projector) and (b) the first read after the 202, which
 * must already be denied.
 * Usage: node --import tsx bench/revocation-convergence.ts [embedded|distributed] [n=20]
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack } from '@gm/distributed';
import { loadConfig, startEmbeddedRuntime } from '@gm/embedded';

const kind = process.argv[2] === 'distributed' ? 'distributed' : 'embedded';
const n = Number(process.argv[3] ?? 20);
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-revconv-'));

let url: string;
let stop: () => Promise<void>;
if (kind === 'distributed') {
  const stack = await startStack({ dataDir, port: 0, namespace: `revconv-${process.pid}` });
  url = stack.url;
  stop = () => stack.stop();
} else {
  const rt = await startEmbeddedRuntime(loadConfig({ MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'warn', MEMORY_RATE_LIMIT_PER_MINUTE: '1000000' }));
  url = rt.url;
  stop = () => rt.close();
}
const credential = readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim();

const api = async (method: string, route: string, token: string, body?: unknown) => {
  const res = await fetch(`${url}${route}`, {
    method, signal: AbortSignal.timeout(30_000),
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json().catch(() => null)) as Record<string, unknown> };
};
const maple = { kind: 'project', id: 'maple' };
const issue = async (agentId: string, principal: string, actions: string[]) =>
  (await api('POST', '/v1/capabilities', credential, { tenant: 'acme', agentId, principal: { id: principal, kind: 'person' }, scopes: [maple], purpose: 'support', actions })).body as { token: string; jti: string };
const pct = (xs: number[], p: number) => ([...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] ?? 0).toFixed(1);

try {
  const admin = await issue('admin-desk', 'carol', ['admin', 'revoke']);
  // The policy decision point reads grants: alice may read and write maple.
  await api('POST', '/v1/grants', admin.token, { principal: { id: 'alice', kind: 'person' }, resource: maple, role: 'member', purposes: ['support'] });
  const writer = await issue('writer-bot', 'alice', ['write']);
  const written = await api('POST', '/v1/memories', writer.token, {
    id: 'conv-1', subjectId: 'cust-1', resource: maple, kind: 'fact', trust: 'trusted', content: 'probe record',
    provenance: [{ source: 'user', observedAt: new Date().toISOString() }],
  });
  if (written.status !== 201) throw new Error(`write answered ${written.status}`);
  const revoke: number[] = [];
  const converge: number[] = [];
  for (let i = 0; i < n; i += 1) {
    const cap = await issue(`reader-${i}`, 'alice', ['read']);
    if ((await api('GET', '/v1/memories/conv-1', cap.token)).status !== 200) throw new Error('the reader cannot read before revocation');
    const t0 = performance.now();
    const res = await api('POST', `/v1/capabilities/${cap.jti}/revoke`, admin.token);
    const t1 = performance.now();
    const read = await api('GET', '/v1/memories/conv-1', cap.token);
    const t2 = performance.now();
    if (res.status !== 202 || read.status !== 401) throw new Error(`revoke ${res.status}, next read ${read.status}`);
    revoke.push(t1 - t0);
    converge.push(t2 - t1);
  }
  process.stdout.write(
    `${kind}: ${n} revocations\n` +
    `  revoke request (202 after the policy projector applied it): p50 ${pct(revoke, 50)} ms, p95 ${pct(revoke, 95)} ms\n` +
    `  202 -> first read (always denied):                          p50 ${pct(converge, 50)} ms, p95 ${pct(converge, 95)} ms\n`,
  );
} finally {
  await stop();
  rmSync(dataDir, { recursive: true, force: true });
}
