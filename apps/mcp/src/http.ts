import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { readCapability } from '@gm/client';
import { sessionServer } from './session.ts';

export interface HttpOptions {
  apiUrl: string;
  host: string;
  port: number;
  /** Open sessions at most; an initialize beyond it is refused (503) until one closes. */
  maxSessions: number;
  /** A request body larger than this is refused (413) before it is parsed. */
  maxBodyBytes: number;
}

interface Session {
  transport: StreamableHTTPServerTransport;
  /** sha256 of the capability the session was opened with: every later request must carry the same one. */
  capabilityHash: string;
  expiresAtMs: number;
}

export interface McpHttpServer {
  url: string;
  sessions(): number;
  close(): Promise<void>;
}

const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');

/** A JSON-RPC error answer outside any session (no content echoed). */
function refuse(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message }, id: null }));
}

async function readJson(req: IncomingMessage, limit: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new RangeError('body too large');
    chunks.push(chunk as Buffer);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

/**
 * MCP over streamable HTTP at `/mcp`. Each session is bound, at `initialize`, to the capability
 * in its `Authorization: Bearer` header, and every later request of the session must carry
 * that same capability: a session cannot be borrowed with another token, nor outlive its
 * capability (a new capability opens a new session). The server keeps no credential of its own.
 */
export async function startMcpHttpServer(options: HttpOptions): Promise<McpHttpServer> {
  const sessions = new Map<string, Session>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    if (new URL(req.url ?? '/', 'http://localhost').pathname !== '/mcp') return refuse(res, 404, 'the MCP endpoint is /mcp');
    const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (token === undefined) return refuse(res, 401, 'send the session\'s capability as Authorization: Bearer <capability>');
    const sessionId = req.headers['mcp-session-id'];
    if (typeof sessionId === 'string') {
      const session = sessions.get(sessionId);
      if (session === undefined) return refuse(res, 404, 'no such session: initialize a new one');
      if (hashOf(token) !== session.capabilityHash) return refuse(res, 403, 'this session is bound to another capability');
      if (Date.now() >= session.expiresAtMs) {
        await session.transport.close();
        return refuse(res, 401, 'the session\'s capability expired: initialize a new session with a fresh one');
      }
      return session.transport.handleRequest(req, res);
    }
    if (req.method !== 'POST') return refuse(res, 400, 'no session: POST an initialize request first');
    let body: unknown;
    try {
      body = await readJson(req, options.maxBodyBytes);
    } catch (error) {
      return refuse(res, error instanceof RangeError ? 413 : 400, error instanceof RangeError ? 'request body too large' : 'the body is not JSON');
    }
    if (!isInitializeRequest(body)) return refuse(res, 400, 'no session: the first request must be initialize');
    if (sessions.size >= options.maxSessions) return refuse(res, 503, 'too many open sessions; retry later');
    let claims;
    try {
      claims = readCapability(token);
    } catch (error) {
      return refuse(res, 401, (error as Error).message);
    }
    const server = sessionServer(options.apiUrl, token, token);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, capabilityHash: hashOf(token), expiresAtMs: claims.exp * 1000 });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  };

  const http: Server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) refuse(res, 500, 'internal error');
      else res.end();
    });
  });
  await new Promise<void>((resolve) => http.listen(options.port, options.host, resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://${options.host}:${port}/mcp`,
    sessions: () => sessions.size,
    close: async () => {
      await Promise.all([...sessions.values()].map((s) => s.transport.close()));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
