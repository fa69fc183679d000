import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '@gm/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { issueCapability, MemoryClient, type CapabilityRequest } from '@gm/client';
import { loadConfig, startEmbeddedRuntime, type EmbeddedRuntime } from '@gm/embedded';
import { sessionServer, startMcpHttpServer, type McpHttpServer } from './index.ts';

/** What an agent's MCP config runs (docs/agents.md). */
const BIN = fileURLToPath(new URL('../bin/governed-memory-mcp.mjs', import.meta.url));
const MAPLE = { kind: 'project', id: 'maple' } as const;
const TOOLS = ['delete_memory', 'deletion_status', 'forget_subject', 'recall', 'remember', 'review_quarantine', 'validate_packet'];

type Structured = Record<string, unknown> & { items?: Array<Record<string, unknown>> };
/** A tool's structured answer, failing the test on a tool error. */
const ok = (result: unknown): Structured => {
  const r = result as CallToolResult;
  if (r.isError) throw new Error(`tool error: ${JSON.stringify(r.content)}`);
  return r.structuredContent as Structured;
};

/** The MCP server with the SDK's own MCP client, over stdio and streamable HTTP, against a real embedded runtime. */
describe('the MCP server (apps/mcp)', () => {
  let runtime: EmbeddedRuntime;
  let dataDir: string;
  let issuer: { baseUrl: string; issuerCredential: string };
  let reviewer: MemoryClient;

  const capability = (agentId: string, principal: string, actions: CapabilityRequest['actions']): CapabilityRequest => ({
    tenant: 'acme', agentId, principal: { id: principal, kind: 'person' }, scopes: [MAPLE], purpose: 'support', actions,
  });
  const agentToken = async () =>
    (await issueCapability(issuer, capability('support-bot', 'alice', ['search', 'read', 'cite', 'write', 'request_delete', 'review', 'promote']))).token;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-mcp-'));
    runtime = await startEmbeddedRuntime(loadConfig({ MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'error', MEMORY_DELETION_VERIFY_RETRY: '50ms' }));
    issuer = { baseUrl: runtime.url, issuerCredential: runtime.credentials.issuerCredential };
    const bootstrap = await issueCapability(issuer, { ...capability('mcp-test-admin', 'mcp-test-admin', ['admin']), principal: { id: 'mcp-test-admin', kind: 'service' } });
    const admin = new MemoryClient({ baseUrl: runtime.url, capability: bootstrap.token });
    // mcp-test-admin takes maple's first admin grant (the bootstrap), then grants the roles.
    await admin.addGrant({ principal: { id: 'mcp-test-admin', kind: 'service' }, resource: MAPLE, role: 'admin', purposes: ['support'] });
    // Alice holds reviewer rights too: what stops her agent promoting its own memory is the rule, not a missing grant.
    for (const [principal, role] of [['alice', 'member'], ['alice', 'reviewer'], ['bob', 'member'], ['bob', 'reviewer']] as const) {
      await admin.addGrant({ principal: { id: principal, kind: 'person' }, resource: MAPLE, role, purposes: ['support'] });
    }
    reviewer = new MemoryClient({ baseUrl: runtime.url, capability: (await issueCapability(issuer, capability('review-desk', 'bob', ['review', 'promote', 'read']))).token });
  }, 120_000);
  afterAll(async () => {
    await runtime?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('over stdio: remember → quarantined → refused self-promotion → reviewer promotes → recall with provenance → forget → recall empty', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath, args: [BIN], cwd: os.tmpdir(),
      env: { PATH: process.env.PATH ?? '', MEMORY_API_URL: runtime.url, MEMORY_CAPABILITY: await agentToken() },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'mcp-spec', version: '1.0.0' });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(TOOLS);
      // Every description says what is governed about it.
      for (const tool of tools) expect(tool.description, tool.name).toContain('Governed:');

      const written = ok(await client.callTool({ name: 'remember', arguments: { content: 'Customer 77 wants invoices by post', subjectId: 'cust-77' } }));
      expect(written.status).toBe('quarantined');
      const id = String(written.id);
      expect(ok(await client.callTool({ name: 'recall', arguments: { query: 'invoices by post', mode: 'lexical' } })).items).toEqual([]);

      // The tool cannot promote what its own agent wrote, even with reviewer rights: a tool error, and the session goes on.
      const self = (await client.callTool({ name: 'review_quarantine', arguments: { action: 'promote', id, expectedVersion: 1 } })) as CallToolResult;
      expect(self.isError).toBe(true);
      expect(self.structuredContent).toMatchObject({ code: 'MEM_SELF_PROMOTION', status: 403 });
      const queue = ok(await client.callTool({ name: 'review_quarantine', arguments: { action: 'list' } }));
      expect(queue.items?.map((i) => i.id)).toEqual([id]);

      await reviewer.promote(id, { expectedVersion: 1 });
      const recalled = ok(await client.callTool({ name: 'recall', arguments: { query: 'invoices by post', mode: 'lexical' } }));
      expect(recalled.items?.map((i) => i.recordId)).toEqual([id]);
      const item = recalled.items?.[0] as { provenanceRefs: Array<{ source: string; uri: string }>; allowedUse: string[] };
      expect(item.provenanceRefs[0]).toMatchObject({ source: 'tool', uri: 'mcp:remember' });
      expect(item.allowedUse).toEqual(['support']);
      const packetId = String(recalled.packetId);
      expect(ok(await client.callTool({ name: 'validate_packet', arguments: { packetId } })).valid).toBe(true);

      const { jobId } = ok(await client.callTool({ name: 'forget_subject', arguments: { subjectId: 'cust-77' } }));
      const done = await eventually('forget verified', async () => {
        const status = ok(await client.callTool({ name: 'deletion_status', arguments: { jobId } }));
        return status.status === 'verified' && status.receipt !== undefined ? status : status.status === 'failed' ? status : undefined;
      }, 20_000);
      expect(done.status).toBe('verified');
      expect(String(done.receipt).split('.')).toHaveLength(3);
      expect(ok(await client.callTool({ name: 'recall', arguments: { query: 'invoices by post', mode: 'lexical' } })).items).toEqual([]);
      expect(ok(await client.callTool({ name: 'validate_packet', arguments: { packetId } })).valid).toBe(false);
    } finally {
      await client.close();
    }
  });

  describe('over streamable HTTP', () => {
    let server: McpHttpServer;
    beforeAll(async () => {
      server = await startMcpHttpServer({ apiUrl: runtime.url, host: '127.0.0.1', port: 0, maxSessions: 8, maxBodyBytes: 65_536 });
    });
    afterAll(async () => server?.close());

    const connect = async (token: string) => {
      const transport = new StreamableHTTPClientTransport(new URL(server.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
      const client = new Client({ name: 'mcp-spec-http', version: '1.0.0' });
      await client.connect(transport);
      return { client, transport };
    };

    it('binds each session to its capability: tools work, a denied call is a tool error, another token cannot borrow the session', async () => {
      const token = await agentToken();
      const { client, transport } = await connect(token);
      try {
        expect((await client.listTools()).tools.map((t) => t.name).sort()).toEqual(TOOLS);
        const denied = (await client.callTool({ name: 'delete_memory', arguments: { id: 'not-anyones' } })) as CallToolResult;
        expect(denied.isError).toBe(true);
        expect(denied.structuredContent).toMatchObject({ code: 'MEM_NOT_FOUND', status: 404 });
        // Arguments outside the tool's schema never reach the API.
        const malformed = (await client.callTool({ name: 'remember', arguments: { content: '', subjectId: 'x' } })) as CallToolResult;
        expect(malformed.isError).toBe(true);
        expect(ok(await client.callTool({ name: 'recall', arguments: { query: 'anything at all', mode: 'lexical' } })).items).toEqual([]);

        const other = await agentToken();
        const borrowed = await fetch(server.url, {
          method: 'POST',
          headers: { authorization: `Bearer ${other}`, 'mcp-session-id': transport.sessionId ?? '', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
        });
        expect(borrowed.status).toBe(403);
        const anonymous = await fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
        expect(anonymous.status).toBe(401);
        expect(server.sessions()).toBe(1);
      } finally {
        await transport.terminateSession();
        await client.close();
      }
      expect(server.sessions()).toBe(0);
    });
  });

  it('refuses a renewed capability for another agent: a session never changes hands', async () => {
    const first = await agentToken();
    const someoneElse = await issueCapability(issuer, capability('other-bot', 'bob', ['search', 'read']));
    const server = sessionServer(runtime.url, async () => someoneElse, first);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: 'mcp-spec-renewal', version: '1.0.0' });
    await client.connect(clientSide);
    try {
      const refused = (await client.callTool({ name: 'recall', arguments: { query: 'anything' } })) as CallToolResult;
      expect(refused.isError).toBe(true);
      expect(JSON.stringify(refused.content)).toContain('not this session');
    } finally {
      await client.close();
    }
  });

  it('exits 2 with one line naming the variable and how its command failed, without a stack or a token', () => {
    // A configured address: the capability is what fails here, not the check of a default one (design §9.2).
    const start = (env: Record<string, string>) =>
      spawnSync(process.execPath, [BIN], { cwd: os.tmpdir(), env: { PATH: process.env.PATH ?? '', MEMORY_URL: runtime.url, ...env }, encoding: 'utf8', timeout: 60_000 });
    const token = 'eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';
    // As `pnpm memctl …` fails: pnpm's trailer follows the command's own message.
    const failing = start({ MEMORY_CAPABILITY_COMMAND: `echo "running memctl --token ${token}" >&2; echo "fetch failed" >&2; echo "[ELIFECYCLE] Command failed with exit code 3." >&2; exit 3` });
    expect(failing.status).toBe(2);
    expect(failing.stderr).toBe('mcp: MEMORY_CAPABILITY_COMMAND: the capability command exited 3: fetch failed\n');
    const silent = start({ MEMORY_CAPABILITY_COMMAND: 'echo not-a-token' });
    expect([silent.status, silent.stderr]).toEqual([2, 'mcp: MEMORY_CAPABILITY_COMMAND: the capability command printed no capability (a compact JWS) on stdout\n']);
    const missing = start({ MEMORY_CAPABILITY_FILE: path.join(os.tmpdir(), 'no-such-capability-file') });
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/^mcp: MEMORY_CAPABILITY_FILE: ENOENT[^\n]*\n$/);
    // Anywhere a command's stderr holds a capability, it is shown as <token>.
    const echoing = start({ MEMORY_CAPABILITY_COMMAND: `echo "bad --token ${token}" >&2; exit 1` });
    expect(echoing.stderr).toBe('mcp: MEMORY_CAPABILITY_COMMAND: the capability command exited 1: bad --token <token>\n');
  });

  it('refuses to start on stdio without a capability, naming the variable', () => {
    const run = spawnSync(process.execPath, [BIN], { cwd: os.tmpdir(), env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8', timeout: 60_000 });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('MEMORY_CAPABILITY');
    // One address: MEMORY_URL, with MEMORY_API_URL still read; two different ones are refused.
    const both = spawnSync(process.execPath, [BIN], {
      cwd: os.tmpdir(), env: { PATH: process.env.PATH ?? '', MEMORY_CAPABILITY: 'x', MEMORY_URL: 'http://127.0.0.1:9001', MEMORY_API_URL: 'http://127.0.0.1:9002' }, encoding: 'utf8', timeout: 60_000,
    });
    expect(both.status).toBe(2);
    expect(both.stderr).toContain('MEMORY_URL and MEMORY_API_URL (its older name) name different addresses');
  });
});
