import path from 'node:path';
import { z } from 'zod';
import { LIMITS } from '@gm/contracts';
import { integer, trustedServiceAddress, type ServiceAddress } from '@gm/config';

const capabilityMinutes = LIMITS.maxCapabilityTtlSeconds / 60;

/**
 * The MCP server's settings (docs/agents.md): exactly one capability source on stdio; HTTP
 * sessions bring their own. `pnpm docs:config` renders them into docs/configuration.md.
 */
export const McpEnv = z.object({
  MEMORY_URL: z.url().optional().meta({
    description: 'the governed memory API the tools call, the one address setting memctl reads too',
    whenUnset: '`MEMORY_API_URL`, else the address of the embedded runtime running on `MEMORY_DATA_DIR`, else `http://127.0.0.1:8080` (on `MEMORY_PORT` when set) once the server there proves it is that directory\'s runtime',
  }),
  MEMORY_API_URL: z.url().optional().meta({ description: 'the older name of `MEMORY_URL`, still read; both set must agree' }),
  MEMORY_DATA_DIR: z.string().min(1).optional().meta({
    description: 'the embedded runtime\'s data directory, where the address of the runtime running on it is found when no URL is set',
    whenUnset: 'the repository\'s `.data`, where `pnpm start` keeps it',
  }),
  MEMORY_PORT: z.string().regex(/^\d{1,5}$/, 'must be a port number').optional().meta({
    description: 'the embedded runtime\'s own port setting: with no URL set and no runtime found in `MEMORY_DATA_DIR`, the address tried is `http://127.0.0.1:<MEMORY_PORT>`, proven before any capability is sent',
    whenUnset: '`8080`',
  }),
  MEMORY_MCP_TRANSPORT: z.enum(['stdio', 'http']).default('stdio').meta({
    description: '`stdio`: one session, with the capability of one of the three variables below; `http`: streamable HTTP on `/mcp`, each session bound to the capability in its `Authorization: Bearer` header',
  }),
  MEMORY_CAPABILITY: z.string().min(1).optional()
    .meta({ description: `stdio: the capability itself; the session ends with it (≤ ${capabilityMinutes} min)` }),
  MEMORY_CAPABILITY_FILE: z.string().min(1).optional()
    .meta({ description: 'stdio: a file something else keeps renewed; read again shortly before each expiry' }),
  MEMORY_CAPABILITY_COMMAND: z.string().min(1).optional().meta({
    description: 'stdio: a command that prints a fresh capability, run again shortly before each expiry (the `credential_process` pattern: the privilege stays with whoever may run the command)',
  }),
  MEMORY_MCP_HOST: z.string().min(1).default('127.0.0.1').meta({ description: 'http: listen address' }),
  MEMORY_MCP_PORT: integer(8765, 0, 65535).meta({ description: 'http: listen port (0 = any free port)' }),
  MEMORY_MCP_MAX_SESSIONS: integer(256, 1, 100_000)
    .meta({ description: 'http: open sessions at most; an initialize beyond it is refused (503) until one closes' }),
  MEMORY_MCP_BODY_LIMIT_BYTES: integer(1_048_576, 1024, 64 * 1_048_576)
    .meta({ description: 'http: a request body larger than this is refused (413) before it is parsed' }),
}).refine((e) => e.MEMORY_URL === undefined || e.MEMORY_API_URL === undefined || e.MEMORY_URL === e.MEMORY_API_URL, {
  message: 'MEMORY_URL and MEMORY_API_URL (its older name) name different addresses; set one', path: ['MEMORY_URL'],
}).refine((e) => e.MEMORY_MCP_TRANSPORT === 'http' || [e.MEMORY_CAPABILITY, e.MEMORY_CAPABILITY_FILE, e.MEMORY_CAPABILITY_COMMAND].filter((v) => v !== undefined).length === 1, {
  message: 'stdio needs exactly one of MEMORY_CAPABILITY, MEMORY_CAPABILITY_FILE and MEMORY_CAPABILITY_COMMAND (the session\'s capability)',
  path: ['MEMORY_CAPABILITY'],
});

export type McpEnv = z.infer<typeof McpEnv>;

/** Where `pnpm start` keeps its data: `.data` at the repository's root (this file is apps/mcp/src). */
const REPOSITORY_DATA_DIR = path.resolve(import.meta.dirname, '../../..', '.data');

/**
 * The API's address and the setting that chose it (a failure names both). A default address is
 * proven to be the runtime of the data directory before it is returned (design §9.2), since the
 * server sends every session's capability there; else UnprovenServiceError.
 */
export function apiUrlOf(env: Pick<McpEnv, 'MEMORY_URL' | 'MEMORY_API_URL' | 'MEMORY_DATA_DIR' | 'MEMORY_PORT'>): Promise<ServiceAddress> {
  return trustedServiceAddress(
    [['MEMORY_URL', env.MEMORY_URL], ['MEMORY_API_URL', env.MEMORY_API_URL]], path.resolve(env.MEMORY_DATA_DIR ?? REPOSITORY_DATA_DIR), env.MEMORY_PORT,
  );
}
