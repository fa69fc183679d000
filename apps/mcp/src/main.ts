/**
 * `pnpm mcp`: the governed memory's MCP server (docs/agents.md), over stdio (default) or streamable
 * HTTP. It holds no credential of its own: every tool call is made with the session's
 * capability, from MEMORY_CAPABILITY, _FILE or _COMMAND (stdio) or from each HTTP
 * session's Authorization header. Diagnostics go to stderr: on stdio, stdout is the protocol.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { UnprovenServiceError, type ServiceAddress } from '@gm/config';
import { capabilityCommand, capabilityFile, redactTokens, sessionServer } from './session.ts';
import { startMcpHttpServer } from './http.ts';
import { apiUrlOf, McpEnv } from './env.ts';

const parsed = McpEnv.safeParse(process.env);
if (!parsed.success) {
  process.stderr.write(`mcp: invalid configuration:\n${parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n')}\n`);
  process.exit(2);
}
const env = parsed.data;
let api: ServiceAddress;
try {
  // Before any capability is had or sent: a default address must first prove it is the runtime.
  api = await apiUrlOf(env);
} catch (err) {
  if (!(err instanceof UnprovenServiceError) && !(err instanceof RangeError)) throw err;
  process.stderr.write(`mcp: ${err.message}\n`);
  process.exit(2);
}

if (env.MEMORY_MCP_TRANSPORT === 'http') {
  const server = await startMcpHttpServer({
    apiUrl: api.url, host: env.MEMORY_MCP_HOST, port: env.MEMORY_MCP_PORT,
    maxSessions: env.MEMORY_MCP_MAX_SESSIONS, maxBodyBytes: env.MEMORY_MCP_BODY_LIMIT_BYTES,
  });
  process.stderr.write(`governed memory MCP server on ${server.url} (streamable HTTP) for ${api.url} (${api.from})\n`);
  const stop = () => void server.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
} else {
  const source = env.MEMORY_CAPABILITY
    ?? (env.MEMORY_CAPABILITY_FILE === undefined ? capabilityCommand(env.MEMORY_CAPABILITY_COMMAND ?? '') : capabilityFile(env.MEMORY_CAPABILITY_FILE));
  let first: string;
  try {
    first = typeof source === 'string' ? source : (await source()).token;
  } catch (err) {
    // The first capability decides whether this server can work at all: one line and exit 2, no stack.
    const variable = env.MEMORY_CAPABILITY_FILE === undefined ? 'MEMORY_CAPABILITY_COMMAND' : 'MEMORY_CAPABILITY_FILE';
    process.stderr.write(`mcp: ${variable}: ${redactTokens(err instanceof Error ? err.message : String(err)).split('\n')[0]}\n`);
    process.exit(2);
  }
  const server = sessionServer(api.url, source, first);
  await server.connect(new StdioServerTransport());
  process.stderr.write(`governed memory MCP server on stdio for ${api.url} (${api.from})\n`);
}
