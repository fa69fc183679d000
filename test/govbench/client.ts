import type { Asker } from './model.ts';

/** One answer of the memory system, as the caller sees it on the wire. */
export interface Reply {
  status: number;
  /** The raw body text: leak targets are searched for in it. */
  text: string;
  body: Record<string, unknown> | null;
}

/**
 * The memory system under test, seen only through the HTTP API's routes. Our runtimes speak
 * it over HTTP; the naive baseline answers the same routes in-process, so both run the same
 * scenario stream through the same runner and the same scoring.
 */
export interface GovClient {
  readonly name: string;
  /** The system's "now", epoch ms. */
  now(): number;
  /** Moves time: a test clock jumps, a real stack waits. */
  advance(ms: number): Promise<void>;
  /** `POST /v1/capabilities` with the issuer credential. */
  issue(tenant: string, asker: Asker): Promise<{ token: string; jti: string }>;
  call(method: 'GET' | 'POST' | 'DELETE', route: string, token: string, body?: unknown): Promise<Reply>;
  close(): Promise<void>;
}

export function parseReply(status: number, text: string): Reply {
  let body: Record<string, unknown> | null = null;
  try {
    const parsed: unknown = text === '' ? null : JSON.parse(text);
    if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
  } catch {
    // not JSON: kept as text
  }
  return { status, text, body };
}
