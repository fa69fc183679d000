import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { SERVICE_ADDRESS_FILE } from '@gm/config';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

/** The fenced blocks of one README section, in order, with the repository's path put in. */
function readmeBlocks(heading: string, language: string): string[] {
  const start = README.indexOf(`\n## ${heading}\n`);
  const end = README.indexOf('\n## ', start + 1);
  const section = README.slice(start, end === -1 ? undefined : end);
  return [...section.matchAll(new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => (m[1] ?? '').replaceAll('/path/to/repo', ROOT));
}

/** A port nobody listens on now, and not the default 8080: the user's own choice. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * A new user's first hour, as the README tells it, on a port of their own: `MEMORY_PORT` is the
 * one change. memctl and the MCP server find the runtime through its data directory (docs/agents.md
 * "Where the service is"); nothing else names the address. The data directory is a fresh one, so
 * that the test leaves the repository's `.data` alone: every command is given the same one, as
 * running them all from the repository's root gives them the same `.data`.
 */
describe("the README's first hour, on a port other than the default", () => {
  let dataDir: string;
  let port: number;
  let runtime: ChildProcess;
  let banner = '';
  /** What every command the README has the user type gets: their shell's environment, no address in it. */
  let userEnv: Record<string, string>;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-first-hour-'));
    port = await freePort();
    userEnv = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] =>
      e[1] !== undefined && !['MEMORY_URL', 'MEMORY_API_URL', 'MEMORY_TOKEN', 'MEMORY_PORT'].includes(e[0])));
    userEnv.MEMORY_DATA_DIR = dataDir;
    // `pnpm start`, as its script runs it, with the one change.
    runtime = spawn(process.execPath, ['--import', 'tsx', 'apps/embedded/src/main.ts'], {
      cwd: ROOT, env: { ...userEnv, MEMORY_PORT: String(port), MEMORY_LOG_LEVEL: 'warn', MEMORY_DELETION_VERIFY_RETRY: '50ms' }, stdio: ['ignore', 'ignore', 'pipe'],
    });
    await new Promise<void>((resolve, reject) => {
      runtime.stderr?.on('data', (chunk: Buffer) => {
        banner += chunk.toString();
        if (banner.includes('Ctrl-C to stop')) resolve();
      });
      runtime.on('exit', (code) => reject(new Error(`pnpm start exited ${code}: ${banner}`)));
    });
  }, 120_000);
  afterAll(async () => {
    if (runtime.exitCode === null) {
      const exited = new Promise((resolve) => runtime.on('exit', resolve));
      runtime.kill('SIGTERM');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** One of the README's shell blocks, run as a user pastes it at the repository's root; it must not fail. */
  const runShell = (block: string): string => {
    const run = spawnSync('bash', ['-euo', 'pipefail', '-c', block], { cwd: ROOT, env: userEnv, encoding: 'utf8', timeout: 120_000 });
    expect(run.status, `${block}\n--- stderr:\n${run.stderr}`).toBe(0);
    // The README's empty-token checks print this: no capability was issued.
    expect(run.stdout + run.stderr).not.toContain('no capability');
    return run.stderr;
  };

  it('serves on the chosen port and writes its address into the data directory', () => {
    expect(banner).toContain(`listening on http://127.0.0.1:${port}`);
    expect(JSON.parse(readFileSync(path.join(dataDir, SERVICE_ADDRESS_FILE), 'utf8'))).toMatchObject({ url: `http://127.0.0.1:${port}`, pid: runtime.pid });
  });

  it('grants with memctl, remembers over MCP with the SDK client, promotes as the reviewer and recalls it', async () => {
    const [grants, promote] = readmeBlocks('Give an agent memory (MCP)', 'sh');
    const [mcpConfig] = readmeBlocks('Give an agent memory (MCP)', 'json');
    expect(grants && promote && mcpConfig, 'the README section has the grants, the MCP config and the promote step').toBeTruthy();
    runShell(grants ?? '');

    const server = (JSON.parse(mcpConfig ?? '{}') as { mcpServers: Record<string, { command: string; args: string[]; env: Record<string, string> }> }).mcpServers.memory;
    expect(server, 'the MCP config names the server "memory"').toBeDefined();
    if (server === undefined) return;
    // The config's own command and variables, in a client's environment (its PATH, the data directory).
    const transport = new StdioClientTransport({
      command: server.command === 'node' ? process.execPath : server.command, args: server.args,
      env: { PATH: process.env.PATH ?? '', HOME: os.homedir(), MEMORY_DATA_DIR: dataDir, ...server.env }, stderr: 'pipe',
    });
    let serverLog = '';
    transport.stderr?.on('data', (chunk: Buffer) => { serverLog += chunk.toString(); });
    const client = new Client({ name: 'first-hour', version: '1.0.0' });
    await client.connect(transport);
    try {
      const call = async (name: string, args: Record<string, unknown>) => {
        const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
        expect(result.isError, `${name}: ${JSON.stringify(result.content)}`).toBeFalsy();
        return result.structuredContent as { id?: string; status?: string; items?: Array<{ recordId: string }> };
      };
      const written = await call('remember', { content: 'The first hour: invoices go out on the third', subjectId: 'first-hour-customer' });
      expect(written.status).toBe('quarantined');
      expect((await call('recall', { query: 'when do invoices go out', mode: 'lexical' })).items).toEqual([]);

      runShell((promote ?? '').replaceAll('<id>', String(written.id)));
      expect((await call('recall', { query: 'when do invoices go out', mode: 'lexical' })).items?.map((i) => i.recordId)).toEqual([written.id]);
      // It says where it found the runtime, so a wrong address would be plain to see.
      expect(serverLog).toContain(`for http://127.0.0.1:${port} (the address the runtime running on ${dataDir} wrote`);
    } finally {
      await client.close();
    }
  });

  it('names the address it tried and the setting that chose it when nothing listens there', async () => {
    const nobody = `http://127.0.0.1:${await freePort()}`;
    const run = spawnSync('pnpm', ['memctl', 'search', '--query', 'invoices'], {
      cwd: ROOT, env: { ...userEnv, MEMORY_URL: nobody, MEMORY_TOKEN: 'x' }, encoding: 'utf8', timeout: 60_000,
    });
    expect(run.status).not.toBe(0);
    expect(run.stderr).toContain(`memctl: cannot reach ${nobody} (MEMORY_URL): ECONNREFUSED`);
  });
});
