import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { issueCapability } from '@gm/client';
import { SERVICE_ADDRESS_FILE } from '@gm/config';
import { loadConfig, startEmbeddedRuntime, type EmbeddedRuntime } from '@gm/embedded';
import { startStranger, type Stranger } from '@gm/testing/stranger';

/** What an agent's MCP config runs (docs/agents.md). */
const BIN = fileURLToPath(new URL('../bin/governed-memory-mcp.mjs', import.meta.url));

/**
 * The MCP server at an address nobody configured (design §9.2, docs/agents.md "Where the service
 * is"): no MEMORY_URL and no runtime found in the data directory, so it tries 127.0.0.1 on the
 * default port — MEMORY_PORT, the runtime's own setting, so the test owns the port — and sends its
 * capability there only once the server proved it is the runtime of that data directory.
 */
describe('the MCP server at the default address', () => {
  let dataDir: string;
  let runtime: EmbeddedRuntime;
  let capability: string;
  let stranger: Stranger;
  /** A client's environment: its PATH, the data directory, no address. */
  const env = (port: number) => ({ PATH: process.env.PATH ?? '', MEMORY_DATA_DIR: dataDir, MEMORY_PORT: String(port), MEMORY_CAPABILITY: capability });

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-mcp-default-'));
    runtime = await startEmbeddedRuntime(loadConfig({ MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'silent' }));
    capability = (await issueCapability({ baseUrl: runtime.url, issuerCredential: runtime.credentials.issuerCredential }, {
      tenant: 'acme', agentId: 'support-bot', principal: { id: 'alice', kind: 'person' }, scopes: [{ kind: 'project', id: 'maple' }],
      purpose: 'support', actions: ['search', 'read', 'write'],
    })).token;
    // The runtime runs, but nothing says where: its address file is gone, so the server falls back to the default.
    rmSync(path.join(dataDir, SERVICE_ADDRESS_FILE));
    stranger = await startStranger();
  }, 120_000);
  afterAll(async () => {
    await stranger?.close();
    await runtime?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('sends a stranger on the default port no capability, and exits 2 with one line saying what to set', async () => {
    const child = spawn(process.execPath, [BIN], { cwd: os.tmpdir(), env: env(stranger.port), stdio: ['pipe', 'ignore', 'pipe'] });
    // No MCP client: a server that started would end with its input.
    child.stdin.end();
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect([code, stderr]).toEqual([2,
      `mcp: the server at http://127.0.0.1:${stranger.port} could not prove it is the runtime of ${dataDir} (it answered 404 to GET /v1/runtime-proof); set MEMORY_URL to the runtime's address\n`]);
    expect(stranger.saw(capability), 'the capability reached the stranger').toBe(false);
    expect(stranger.received.filter((r) => r.headers.authorization !== undefined)).toEqual([]);
  }, 60_000);

  it('serves once the runtime on the default port proved it is the data directory\'s', async () => {
    const port = Number(new URL(runtime.url).port);
    const transport = new StdioClientTransport({ command: process.execPath, args: [BIN], cwd: os.tmpdir(), env: env(port), stderr: 'pipe' });
    let serverLog = '';
    transport.stderr?.on('data', (chunk: Buffer) => { serverLog += chunk.toString(); });
    const client = new Client({ name: 'default-address', version: '1.0.0' });
    await client.connect(transport);
    try {
      const result = (await client.callTool({ name: 'recall', arguments: { query: 'invoices', mode: 'lexical' } })) as CallToolResult;
      expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
      expect(serverLog).toContain(`for http://127.0.0.1:${port} (the default on MEMORY_PORT`);
    } finally {
      await client.close();
    }
  }, 60_000);
});
