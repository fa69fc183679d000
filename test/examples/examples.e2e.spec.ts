/**
 * The runnable examples (examples/README.md), run as a reader runs them from the repository
 * (`node --import tsx …`) against a real embedded runtime. The ingest example needs the
 * distributed runtime: its functions are what test/distributed/ingest.e2e.spec.ts drives, and
 * `pnpm typecheck` checks its entry point.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issueCapability, MemoryClient, type CapabilityRequest } from '@gm/client';
import { loadConfig, startEmbeddedRuntime, type EmbeddedRuntime } from '@gm/embedded';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MAPLE = { kind: 'project', id: 'maple' } as const;

/** Runs an example from the repository root with only PATH and the given variables; answers its JSON line. */
async function runExample(file: string, env: Record<string, string>, args: string[] = []): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', file, ...args], { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env } });
  return JSON.parse(stdout) as Record<string, unknown>;
}

describe('the examples, run from the repository', () => {
  let runtime: EmbeddedRuntime;
  let dataDir: string;
  let issuer: { baseUrl: string; issuerCredential: string };
  const capability = (agentId: string, actions: CapabilityRequest['actions']): CapabilityRequest => ({
    tenant: 'acme', agentId, principal: { id: 'alice', kind: 'person' }, scopes: [MAPLE], purpose: 'support', actions,
  });

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-examples-'));
    runtime = await startEmbeddedRuntime(loadConfig({ MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'error', MEMORY_DELETION_VERIFY_RETRY: '50ms' }));
    issuer = { baseUrl: runtime.url, issuerCredential: runtime.credentials.issuerCredential };
    // Capabilities carry no rights of their own: the first admin grant on maple, then alice's membership.
    const bootstrap = await issueCapability(issuer, { ...capability('examples-admin', ['admin']), principal: { id: 'examples-admin', kind: 'service' } });
    const admin = new MemoryClient({ baseUrl: runtime.url, capability: bootstrap.token });
    await admin.addGrant({ principal: { id: 'examples-admin', kind: 'service' }, resource: MAPLE, role: 'admin', purposes: ['support'] });
    await admin.addGrant({ principal: { id: 'alice', kind: 'person' }, resource: MAPLE, role: 'member', purposes: ['support'] });
  }, 120_000);
  afterAll(async () => {
    await runtime?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('sdk: writes, finds, forgets, waits for a verified receipt, and no longer finds the memory', async () => {
    const token = (await issueCapability(issuer, capability('sdk-example', ['write', 'search', 'read', 'request_delete']))).token;
    const result = await runExample('examples/sdk/write-search-forget.mjs', { MEMORY_URL: runtime.url, MEMORY_TOKEN: token });
    expect(result).toMatchObject({ status: 'active', foundBeforeForget: true, receipt: { status: 'verified', recordIds: [result.recordId] }, foundAfterForget: false });
  });

  it('mcp: the agent\'s own memory is quarantined and not recalled, while a trusted one is', async () => {
    const writer = new MemoryClient({ baseUrl: runtime.url, capability: (await issueCapability(issuer, capability('importer', ['write']))).token });
    const trusted = await writer.remember({
      subjectId: 'cust-7', resource: MAPLE, kind: 'preference', trust: 'trusted',
      content: 'Customer 7 wants quarterly wagtail reports', provenance: [{ source: 'user', observedAt: new Date().toISOString() }],
    });
    const agent = (await issueCapability(issuer, capability('my-agent', ['write', 'search', 'read', 'cite']))).token;
    const result = await runExample('examples/mcp/remember-recall.ts', { MEMORY_URL: runtime.url, MEMORY_CAPABILITY: agent }, ['quarterly wagtail reports']);
    expect(result.tools).toEqual(expect.arrayContaining(['recall', 'remember']));
    expect(result.remembered).toMatchObject({ status: 'quarantined' });
    expect(result.recalled).toEqual([trusted.id]);
  });
});
