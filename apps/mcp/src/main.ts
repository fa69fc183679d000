/**
 * `pnpm mcp`: the governed memory's MCP server (issue 15), over stdio (default) or streamable
 * HTTP. It holds no credential of its own: every tool call is made with the session's
 * capability, from MEMORY_CAPABILITY, _FILE or _COMMAND (stdio) or from each HTTP
 * session's Authorization header. Diagnostics go to stderr: on stdio, stdout is the protocol.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { capabilityCommand, capabilityFile, sessionServer } from './session.ts';
import { startMcpHttpServer } from './http.ts';

const Env = z.object({
  MEMORY_API_URL: z.url().default('http://127.0.0.1:8080'),
  MEMORY_MCP_TRANSPORT: z.enum(['stdio', 'http']).default('stdio'),
  /** stdio: the capability itself, a file something else keeps renewed, or a command that prints a fresh one (each read again before expiry). */
  MEMORY_CAPABILITY: z.string().min(1).optional(),
  MEMORY_CAPABILITY_FILE: z.string().min(1).optional(),
  MEMORY_CAPABILITY_COMMAND: z.string().min(1).optional(),
  MEMORY_MCP_HOST: z.string().min(1).default('127.0.0.1'),
  MEMORY_MCP_PORT: z.coerce.number().int().min(0).max(65535).default(8765),
  MEMORY_MCP_MAX_SESSIONS: z.coerce.number().int().min(1).default(256),
  MEMORY_MCP_BODY_LIMIT_BYTES: z.coerce.number().int().min(1024).default(1_048_576),
}).refine((e) => e.MEMORY_MCP_TRANSPORT === 'http' || [e.MEMORY_CAPABILITY, e.MEMORY_CAPABILITY_FILE, e.MEMORY_CAPABILITY_COMMAND].filter((v) => v !== undefined).length === 1, {
  message: 'stdio needs exactly one of MEMORY_CAPABILITY, MEMORY_CAPABILITY_FILE and MEMORY_CAPABILITY_COMMAND (the session\'s capability)',
  path: ['MEMORY_CAPABILITY'],
});

const parsed = Env.safeParse(process.env);
if (!parsed.success) {
  process.stderr.write(`mcp: invalid configuration:\n${parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n')}\n`);
  process.exit(2);
}
const env = parsed.data;

if (env.MEMORY_MCP_TRANSPORT === 'http') {
  const server = await startMcpHttpServer({
    apiUrl: env.MEMORY_API_URL, host: env.MEMORY_MCP_HOST, port: env.MEMORY_MCP_PORT,
    maxSessions: env.MEMORY_MCP_MAX_SESSIONS, maxBodyBytes: env.MEMORY_MCP_BODY_LIMIT_BYTES,
  });
  process.stderr.write(`governed memory MCP server on ${server.url} (streamable HTTP) for ${env.MEMORY_API_URL}\n`);
  const stop = () => void server.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
} else {
  const source = env.MEMORY_CAPABILITY
    ?? (env.MEMORY_CAPABILITY_FILE === undefined ? capabilityCommand(env.MEMORY_CAPABILITY_COMMAND ?? '') : capabilityFile(env.MEMORY_CAPABILITY_FILE));
  const first = typeof source === 'string' ? source : (await source()).token;
  const server = sessionServer(env.MEMORY_API_URL, source, first);
  await server.connect(new StdioServerTransport());
  process.stderr.write(`governed memory MCP server on stdio for ${env.MEMORY_API_URL}\n`);
}
