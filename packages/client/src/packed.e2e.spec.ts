import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, startEmbeddedRuntime, type EmbeddedRuntime } from '@gm/embedded';
import { issueCapability, MemoryClient, type CapabilityRequest } from './index.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const EXAMPLE = path.join(ROOT, 'examples/sdk/write-search-forget.mjs');
const TSC = path.join(ROOT, 'node_modules/.bin/tsc');
const MAPLE = { kind: 'project', id: 'maple' } as const;

/** Compiles against the installed declarations only: wrong uses must be refused, or the types are `any`. */
const PROBE = `import { MemoryApiError, MemoryClient, MemoryNetworkError, DEFAULT_RETRY, readCapability, issuedCapabilities, type WriteMemory } from '@gm/client';
const client = new MemoryClient({ baseUrl: 'http://127.0.0.1:8080', capability: 'token', retry: { attempts: DEFAULT_RETRY.attempts } });
const memory: WriteMemory = { subjectId: 's', resource: { kind: 'project', id: 'p' }, kind: 'fact', trust: 'trusted', content: 'c', provenance: [{ source: 'user', observedAt: '2026-01-01T00:00:00Z' }] };
// @ts-expect-error a kind the contracts do not know
const unknownKind: WriteMemory = { ...memory, kind: 'gossip' };
const receipt = await client.waitForReceipt('job', { timeoutMs: 1_000, intervalMs: 100, unknownGraceMs: 500 });
const verified: 'verified' | 'failed' = receipt.payload.status;
// @ts-expect-error an evidence item is an object, not a string
const item: string = (await client.session().search({ query: 'q' })).items[0];
const code = (e: unknown): string | undefined => (e instanceof MemoryApiError ? e.code : e instanceof MemoryNetworkError ? e.code : undefined);
export { unknownKind, verified, item, code, readCapability, issuedCapabilities };
`;

/**
 * The SDK as someone outside this repository gets it: built, packed into tarballs, installed
 * into a project of its own (no workspace to fall back on), and used from plain JavaScript and
 * from TypeScript against a real embedded runtime.
 */
describe('@gm/client installed from its packed tarball', () => {
  let runtime: EmbeddedRuntime;
  let dataDir: string;
  let packs: string;
  let scratch: string;
  let token: string;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-packed-data-'));
    packs = mkdtempSync(path.join(os.tmpdir(), 'gm-packed-tarballs-'));
    scratch = mkdtempSync(path.join(os.tmpdir(), 'gm-packed-project-'));
    const [started] = await Promise.all([
      startEmbeddedRuntime(loadConfig({ MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'error', MEMORY_DELETION_VERIFY_RETRY: '50ms' })),
      packAndInstall(),
    ]);
    runtime = started;
    const issuer = { baseUrl: runtime.url, issuerCredential: runtime.credentials.issuerCredential };
    const capability = (principal: string, actions: CapabilityRequest['actions']): CapabilityRequest => ({
      tenant: 'acme', agentId: `${principal}-agent`, principal: { id: principal, kind: 'person' }, scopes: [MAPLE], purpose: 'support', actions,
    });
    // Capabilities carry no rights of their own: the first admin grant on maple, then alice's membership.
    const admin = new MemoryClient({ baseUrl: runtime.url, capability: (await issueCapability(issuer, capability('packed-admin', ['admin']))).token });
    await admin.addGrant({ principal: { id: 'packed-admin', kind: 'person' }, resource: MAPLE, role: 'admin', purposes: ['support'] });
    await admin.addGrant({ principal: { id: 'alice', kind: 'person' }, resource: MAPLE, role: 'member', purposes: ['support'] });
    token = (await issueCapability(issuer, capability('alice', ['write', 'search', 'read', 'request_delete']))).token;
  }, 180_000);
  afterAll(async () => {
    await runtime?.close();
    for (const dir of [dataDir, packs, scratch]) if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Packs contracts and client (each pack builds first), then installs both into the scratch project from the local store only. */
  async function packAndInstall(): Promise<void> {
    for (const pkg of ['contracts', 'client']) await run('pnpm', ['pack', '--pack-destination', packs], { cwd: path.join(ROOT, 'packages', pkg) });
    const tarball = (name: string) => {
      const file = readdirSync(packs).find((f) => f.startsWith(`gm-${name}-`) && f.endsWith('.tgz'));
      if (file === undefined) throw new Error(`pnpm pack made no tarball of @gm/${name}`);
      return `file:${path.join(packs, file)}`;
    };
    writeFileSync(path.join(scratch, 'package.json'), JSON.stringify({
      name: 'sdk-consumer', private: true, type: 'module',
      dependencies: { '@gm/client': tarball('client'), '@gm/contracts': tarball('contracts') },
    }));
    // The client's tarball asks for @gm/contracts by version; the override points that at the
    // tarball beside it, as docs/agents.md tells a pnpm user to (there is no registry copy).
    writeFileSync(path.join(scratch, 'pnpm-workspace.yaml'), `overrides:\n  '@gm/contracts': '${tarball('contracts')}'\n`);
    const { stdout: store } = await run('pnpm', ['store', 'path'], { cwd: ROOT });
    // Offline: zod comes from the store this workspace was installed from, or the install fails here.
    await run('pnpm', ['install', '--offline', '--store-dir', store.trim()], { cwd: scratch });
    copyFileSync(EXAMPLE, path.join(scratch, 'write-search-forget.mjs'));
  }

  it('runs the SDK example with plain node: written, found, forgotten, a verified receipt, not found after', async () => {
    const { stdout } = await run(process.execPath, ['write-search-forget.mjs'], {
      cwd: scratch, env: { PATH: process.env.PATH ?? '', MEMORY_URL: runtime.url, MEMORY_TOKEN: token },
    });
    const result = JSON.parse(stdout) as Record<string, unknown>;
    expect(result).toMatchObject({ status: 'active', foundBeforeForget: true, receipt: { status: 'verified' }, foundAfterForget: false });
    expect((result.receipt as { recordIds: string[] }).recordIds).toEqual([result.recordId]);
  });

  it('type-checks TypeScript and the example against the installed declarations alone', async () => {
    writeFileSync(path.join(scratch, 'probe.ts'), PROBE);
    writeFileSync(path.join(scratch, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        target: 'es2024', module: 'nodenext', moduleResolution: 'nodenext', strict: true, noEmit: true, allowJs: true, checkJs: true,
        // Node's own types from this repository: the scratch project installs nothing but the SDK.
        typeRoots: [path.join(ROOT, 'node_modules/@types')], types: ['node'],
      },
      files: ['probe.ts', 'write-search-forget.mjs'],
    }));
    const checked = await run(TSC, ['-p', scratch], { cwd: scratch }).then(() => 'clean', (e: { stdout?: string }) => e.stdout ?? String(e));
    expect(checked).toBe('clean');
  });
});
