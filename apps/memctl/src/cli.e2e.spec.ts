import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, startEmbeddedRuntime, type EmbeddedRuntime } from '@gm/embedded';

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
