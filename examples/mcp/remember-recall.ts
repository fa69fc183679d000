/**
 * An MCP client talking to the memory's MCP server over stdio (docs/agents.md#the-mcp-server-appsmcp),
 * as an agent host does: it starts the server, lists its tools, `remember`s a note and
 * `recall`s with a query. What the agent remembers is untrusted, so it is quarantined and not
 * recalled until a reviewer promotes it (§5); recall returns what was already trusted.
 *
 *   MEMORY_CAPABILITY=… node --import tsx examples/mcp/remember-recall.ts 'customer prefers email'
 *
 * The server gets its capability as an agent host would give it: MEMORY_CAPABILITY,
 * MEMORY_CAPABILITY_FILE or MEMORY_CAPABILITY_COMMAND, passed through from this environment
 * (never on a command line), with MEMORY_URL. Prints tool names and record ids as one JSON line.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

/** The server entry an agent's config names (mcp-config.json beside this file). */
const SERVER = fileURLToPath(new URL('../../apps/mcp/bin/governed-memory-mcp.mjs', import.meta.url));
const PASSED = ['MEMORY_URL', 'MEMORY_CAPABILITY', 'MEMORY_CAPABILITY_FILE', 'MEMORY_CAPABILITY_COMMAND'] as const;

/** A tool's structured answer; a refusal (`isError`) carries the API's problem code, shown as is. */
function structured(result: unknown): Record<string, unknown> {
  const r = result as CallToolResult;
  if (r.isError) throw new Error(`tool error: ${JSON.stringify(r.content)}`);
  return r.structuredContent ?? {};
}

const query = process.argv[2] ?? 'customer prefers email';
const env: Record<string, string> = {};
for (const name of PASSED) {
  const value = process.env[name];
  if (value !== undefined) env[name] = value;
}
// The SDK adds a safe default environment (PATH, HOME) to what is passed here.
const transport = new StdioClientTransport({ command: process.execPath, args: [SERVER], env, stderr: 'inherit' });
const client = new Client({ name: 'governed-memory-example', version: '1.0.0' });
await client.connect(transport);
try {
  const { tools } = await client.listTools();
  const remembered = structured(await client.callTool({
    name: 'remember', arguments: { content: `Noted by the example agent: ${query}`, subjectId: `example-subject-${randomUUID()}` },
  }));
  const recalled = structured(await client.callTool({ name: 'recall', arguments: { query, mode: 'lexical' } }));
  const items = (recalled.items ?? []) as Array<{ recordId: string }>;
  process.stdout.write(`${JSON.stringify({
    tools: tools.map((t) => t.name).sort(),
    remembered: { id: remembered.id, status: remembered.status },
    recalled: items.map((i) => i.recordId),
  })}\n`);
} finally {
  await client.close();
}
