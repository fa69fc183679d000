import { z } from 'zod';

/** The MCP server's settings (docs/agents.md): exactly one capability source on stdio; HTTP sessions bring their own. */
export const McpEnv = z.object({
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
