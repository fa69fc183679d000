import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { MemoryClient, readCapability, type CapabilitySource, type IssuedToken } from '@gm/client';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { memoryMcpServer } from './tools.ts';

/**
 * The tools of one session over the API at `apiUrl`, bound to the capability `token` says it
 * is. A source that renews it must keep naming the same tenant, agent and principal: a renewed
 * capability for anyone else is refused, so a session never changes hands.
 */
export function sessionServer(apiUrl: string, source: CapabilitySource, token: string): McpServer {
  const claims = readCapability(token);
  // The tools write to a resource; a tenant scope (for a privacy officer's forget) is not one.
  const resource = claims.scopes.find((s) => s.kind !== 'tenant');
  if (resource === undefined) throw new TypeError('the capability names no resource among its scopes');
  const bound = typeof source === 'string' ? source : async (): Promise<IssuedToken> => {
    const issued = await source();
    const next = readCapability(issued.token);
    if (next.tenant !== claims.tenant || next.sub !== claims.sub || next.act.sub !== claims.act.sub) {
      throw new Error(`the renewed capability is for ${next.tenant}/${next.sub} (${next.act.sub}), not this session's ${claims.tenant}/${claims.sub} (${claims.act.sub})`);
    }
    return issued;
  };
  // A memory session per MCP session: each tool call carries the consistency token of the last
  // answer, so a recall sees what this session just wrote and a job it just opened is there to follow.
  return memoryMcpServer(new MemoryClient({ baseUrl: apiUrl, capability: bound }).session(), { resource, purpose: claims.purpose });
}

const tokenOf = (raw: string): IssuedToken => {
  const token = raw.trim();
  return { token, expiresAt: new Date(readCapability(token).exp * 1000) };
};

/**
 * A capability kept in a file by something else (a sidecar that renews it): read again each
 * time the client needs a fresh one, so a stdio session outlives one capability's 15 minutes.
 */
export const capabilityFile = (file: string) => async (): Promise<IssuedToken> => tokenOf(readFileSync(file, 'utf8'));

/**
 * A command that prints a fresh capability (e.g. `pnpm -s memctl capability issue …` run by the
 * operator's account), run again before each expiry — the credential_process pattern: the
 * privilege stays with the command's owner, never with this server.
 */
export const capabilityCommand = (command: string) => async (): Promise<IssuedToken> => {
  let stdout: string;
  try {
    ({ stdout } = await promisify(execFile)('/bin/sh', ['-c', command], { timeout: 60_000, maxBuffer: 65_536 }));
  } catch (err) {
    // One line: how it ended and the last line it said, never its output (a token) nor a stack.
    const failed = err as { code?: unknown; signal?: unknown; killed?: boolean; stderr?: unknown };
    const how = failed.killed === true ? 'was stopped after 60 s' : typeof failed.code === 'number' ? `exited ${failed.code}` : `failed (${String(failed.code ?? failed.signal ?? 'no exit code')})`;
    const said = lastLine(redactTokens(typeof failed.stderr === 'string' ? failed.stderr : ''));
    throw new Error(`the capability command ${how}${said === '' ? '' : `: ${said}`}`);
  }
  try {
    return tokenOf(stdout);
  } catch {
    throw new Error('the capability command printed no capability (a compact JWS) on stdout');
  }
};

/**
 * The last line that says something, at most 300 characters: not pnpm's own trailer
 * (`[ELIFECYCLE] Command failed with exit code 1.`), which follows the command's real message.
 */
const lastLine = (text: string): string =>
  (text.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.includes('ELIFECYCLE')).at(-1) ?? '').slice(0, 300);
/** Anything shaped like a compact JWS, replaced: a command's stderr may echo its own arguments, capabilities among them. */
export const redactTokens = (text: string): string => text.replace(/eyJ[\w-]*\.[\w-]*\.[\w-]*/g, '<token>');
