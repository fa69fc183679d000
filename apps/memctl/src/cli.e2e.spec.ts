import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_ADDRESS_FILE } from '@gm/config';
import { loadConfig, startEmbeddedRuntime, type EmbeddedRuntime } from '@gm/embedded';
import { relayTo, startStranger, type Stranger } from '@gm/testing/stranger';

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('./cli.ts', import.meta.url));
/** Each memctl call is a fresh Node process with tsx (about a second, more on a busy machine). */
const CLI_TEST_MS = 120_000;

/** The administration commands of memctl against a running embedded runtime (§6.2). */
describe('memctl administration', () => {
  let dataDir: string;
  let rt: EmbeddedRuntime;
  let admin: string;

  const memctl = async (...args: string[]): Promise<string> => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', CLI, ...args, '--url', rt.url, '--data-dir', dataDir], {
      env: { ...process.env, MEMORY_TOKEN: admin },
    });
    return stdout;
  };
  const json = async (...args: string[]) => JSON.parse(await memctl(...args)) as Record<string, unknown>;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-memctl-'));
    rt = await startEmbeddedRuntime(loadConfig({ MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'silent' }));
    admin = (await memctl(
      'capability', 'issue', '--tenant', 'acme', '--agent', 'admin-desk', '--principal', 'carol', '--scope', 'project:maple',
      '--scope', 'tenant:acme', '--purpose', 'support', '--actions', 'admin,revoke',
    )).trim();
    // carol becomes maple's administrator and the tenant's: each first admin grant, on the issuer's word.
    await memctl('grant', 'add', '--principal', 'carol', '--resource', 'project:maple', '--role', 'admin', '--purposes', 'support');
    await memctl('grant', 'add', '--principal', 'carol', '--resource', 'tenant:acme', '--role', 'admin', '--purposes', 'support');
  }, CLI_TEST_MS);
  afterAll(async () => {
    await rt.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('names the address it could not reach, and the setting that chose it', async () => {
    // A port nothing listens on: the first free one the OS gives, closed again.
    const server = (await import('node:net')).createServer();
    const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
    await new Promise((resolve) => server.close(resolve));
    const unreachable = `http://127.0.0.1:${port}`;
    const attempt = (args: string[], env: Record<string, string>) =>
      run(process.execPath, ['--import', 'tsx', CLI, 'job', '--id', 'j-1', ...args], { env: { ...process.env, MEMORY_TOKEN: admin, MEMORY_URL: '', ...env } })
        .then(() => undefined, (err: { code: number; stderr: string }) => err);
    const byEnv = await attempt([], { MEMORY_URL: unreachable });
    expect([byEnv?.code, byEnv?.stderr]).toEqual([1, `memctl: cannot reach ${unreachable} (MEMORY_URL): ECONNREFUSED\n`]);
    const byFlag = await attempt(['--url', unreachable], {});
    expect(byFlag?.stderr).toBe(`memctl: cannot reach ${unreachable} (--url): ECONNREFUSED\n`);
  }, CLI_TEST_MS);

  it('adds and removes grants', async () => {
    const added = await json('grant', 'add', '--principal', 'alice', '--resource', 'project:maple', '--role', 'member', '--purposes', 'support') as { grantId: string };
    expect(added).toEqual({ grantId: expect.any(String), policyRevision: 3 });
    expect((await rt.state.policies.grant('acme', added.grantId))?.principal).toEqual({ id: 'alice', kind: 'person' });
    expect(await json('grant', 'remove', '--id', added.grantId)).toEqual({ policyRevision: 4 });
    expect(await rt.state.policies.grant('acme', added.grantId)).toBeNull();
  }, CLI_TEST_MS);

  it('adds and revokes delegations, revokes capabilities and agents, places and releases legal holds', async () => {
    expect(await json('delegation', 'add', '--id', 'd-1', '--agent', 'helper-bot', '--scope', 'project:maple', '--purposes', 'support', '--actions', 'search'))
      .toMatchObject({ delegationId: 'd-1' });
    await json('delegation', 'revoke', '--id', 'd-1');
    expect((await rt.state.policies.delegation('acme', 'd-1'))?.revoked).toBe(true);

    const token = (await memctl('capability', 'issue', '--tenant', 'acme', '--agent', 'bot', '--scope', 'project:maple', '--purpose', 'support', '--actions', 'search')).trim();
    const { jti } = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { jti: string };
    await json('capability', 'revoke', jti);
    expect(await rt.state.revocations.isRevoked('acme', 'bot', jti)).toBe(true);
    await json('agent', 'revoke', 'rogue-bot');
    expect((await rt.state.policies.snapshot('acme')).revokedAgents).toEqual(['rogue-bot']);

    expect(await json('hold', 'add', '--id', 'h-1', '--subject', 'cust-42', '--reason', 'litigation')).toMatchObject({ holdId: 'h-1' });
    expect(await json('hold', 'list')).toEqual({ items: [{ holdId: 'h-1', tenant: 'acme', subjectId: 'cust-42', reason: 'litigation' }] });
    await json('hold', 'remove', '--id', 'h-1');
    expect(await rt.state.policies.isOnHold('acme', 'cust-42')).toBeNull();
    expect(await rt.state.policyRevisions.current('acme')).toBe(10); // one per change, both tests and carol's two admin grants
  }, CLI_TEST_MS);
});

/**
 * An address nobody configured (design §9.2): with no MEMORY_URL and no runtime found in the data
 * directory, memctl tries 127.0.0.1 on the default port — MEMORY_PORT here, the runtime's own
 * setting, so the test owns the port — and sends the issuer credential or a capability there only
 * once the server proved it is the runtime of that data directory.
 */
describe('memctl at the default address', () => {
  let dataDir: string;
  let rt: EmbeddedRuntime;
  let credential: string;
  let capability: string;
  const strangers: Stranger[] = [];
  const { MEMORY_ISSUER_CREDENTIAL: _ignored, ...withoutIssuerCredential } = process.env;

  /** memctl as a user runs it: no MEMORY_URL, the data directory's runtime not found, the default port `port`. */
  const byDefault = (port: number, ...args: string[]) =>
    run(process.execPath, ['--import', 'tsx', CLI, ...args, '--data-dir', dataDir], {
      // The issuer credential from the data directory, as memctl reads it when the environment has none.
      env: { ...withoutIssuerCredential, MEMORY_URL: '', MEMORY_PORT: String(port), MEMORY_TOKEN: capability },
    }).then(({ stdout }) => ({ code: 0, stdout, stderr: '' }), (err: { code: number; stdout: string; stderr: string }) => err);
  const issue = (port: number) => byDefault(port, 'capability', 'issue', '--tenant', 'acme', '--agent', 'bot', '--scope', 'project:maple', '--purpose', 'support', '--actions', 'search');
  const refusal = (port: number, why: string) =>
    `memctl: the server at http://127.0.0.1:${port} could not prove it is the runtime of ${dataDir} (${why}); set MEMORY_URL to the runtime's address\n`;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-memctl-default-'));
    rt = await startEmbeddedRuntime(loadConfig({ MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'silent' }));
    credential = rt.credentials.issuerCredential;
    capability = (await run(process.execPath, ['--import', 'tsx', CLI, 'capability', 'issue', '--url', rt.url, '--data-dir', dataDir,
      '--tenant', 'acme', '--agent', 'bot', '--scope', 'project:maple', '--purpose', 'support', '--actions', 'search'])).stdout.trim();
    // The runtime runs, but nothing says where: its address file is gone, so clients fall back to the default.
    rmSync(path.join(dataDir, SERVICE_ADDRESS_FILE));
  }, CLI_TEST_MS);
  afterAll(async () => {
    await Promise.all(strangers.map((s) => s.close()));
    await rt.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('sends a stranger on the default port neither the issuer credential nor a capability, and exits 2 saying what to set', async () => {
    const stranger = await startStranger();
    strangers.push(stranger);
    expect(await issue(stranger.port)).toMatchObject({ code: 2, stderr: refusal(stranger.port, 'it answered 404 to GET /v1/runtime-proof') });
    expect(await byDefault(stranger.port, 'job', '--id', 'j-1')).toMatchObject({ code: 2, stderr: refusal(stranger.port, 'it answered 404 to GET /v1/runtime-proof') });
    expect(stranger.received.length, 'it was asked for its proof').toBeGreaterThan(0);
    expect(stranger.saw(credential), 'the issuer credential reached the stranger').toBe(false);
    expect(stranger.saw(capability), 'the capability reached the stranger').toBe(false);
    expect(stranger.received.filter((r) => r.headers.authorization !== undefined)).toEqual([]);
  }, CLI_TEST_MS);

  it('does not take a proof the genuine runtime gave for its own port, relayed by a stranger', async () => {
    const relay = await startStranger(relayTo(rt.url));
    strangers.push(relay);
    const { port } = new URL(rt.url);
    expect(await issue(relay.port)).toMatchObject({
      code: 2, stderr: refusal(relay.port, `its proof names 127.0.0.1:${port}, not 127.0.0.1:${relay.port}: it passed on another server's answer`),
    });
    expect(relay.saw(credential) || relay.saw(capability)).toBe(false);
  }, CLI_TEST_MS);

  it('exits 2 when nothing listens on the default port', async () => {
    const probe = createServer();
    const port = await new Promise<number>((resolve) => probe.listen(0, '127.0.0.1', () => resolve((probe.address() as { port: number }).port)));
    await new Promise((resolve) => probe.close(resolve));
    expect(await issue(port)).toMatchObject({ code: 2, stderr: refusal(port, 'nothing answers there: ECONNREFUSED') });
  }, CLI_TEST_MS);

  it('issues a capability, and uses one, once the runtime on the default port proved it is the data directory\'s', async () => {
    const port = Number(new URL(rt.url).port);
    const issued = await issue(port);
    expect(issued.code, issued.stderr).toBe(0);
    expect(issued.stdout.trim()).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    // The capability reached the runtime: a search (empty, with no grant) answered.
    const search = await byDefault(port, 'search', '--query', 'lisbon');
    expect(search.code, search.stderr).toBe(0);
    expect(JSON.parse(search.stdout)).toMatchObject({ items: [] });
  }, CLI_TEST_MS);
});
