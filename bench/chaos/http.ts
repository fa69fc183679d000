/**
 * The fault suite's HTTP client: every answer is entered in the ledger (status, problem+json,
 * Retry-After, or the network error), and a retry follows what a well-behaved client does —
 * on a 503 or no answer, wait (Retry-After, capped) and send the same request again.
 */
import type { Answer } from './ledger.ts';

export interface HttpAnswer {
  status: number;
  body: unknown;
}

/**
 * What one request may wait for an answer before the client gives up on it (a client's own
 * timeout): longer than the API's MEMORY_REQUEST_TIMEOUT (30 s), after which it answers 503 itself.
 */
const CLIENT_TIMEOUT_MS = 35_000;
const MAX_BACKOFF_MS = 2_000;

export class ChaosHttp {
  constructor(
    private readonly url: string,
    private readonly answers: Answer[],
    private readonly clock: () => number,
  ) {}

  /** One request; `route` names it in the ledger (the path without ids). */
  async send(
    method: 'GET' | 'POST' | 'DELETE', path: string, route: string, token: string, body?: unknown, headers: Record<string, string> = {},
  ): Promise<HttpAnswer | undefined> {
    const init: RequestInit = {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS),
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    };
    const started = this.clock();
    try {
      const res = await fetch(`${this.url}${path}`, init);
      const text = await res.text();
      const parsed: unknown = text.length > 0 && (res.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text;
      const problem = (res.headers.get('content-type') ?? '').startsWith('application/problem+json');
      const code = problem && typeof parsed === 'object' && parsed !== null && 'code' in parsed ? String((parsed as { code: unknown }).code) : undefined;
      this.answers.push({
        at: this.clock(), ms: this.clock() - started, route, status: res.status, problem, retryAfter: res.headers.has('retry-after'), ...(code === undefined ? {} : { code }),
      });
      return { status: res.status, body: parsed };
    } catch (err) {
      const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
      this.answers.push({ at: this.clock(), ms: this.clock() - started, route, status: 0, problem: false, retryAfter: false, networkError: `${err instanceof Error ? err.name : 'error'}${cause}` });
      return undefined;
    }
  }

  /**
   * Sends until an answer other than 503 arrives (or `giveUpAt` passes: undefined). Between
   * attempts it waits as a client would: doubling from 100 ms, at most 2 s. `onAttempt` hears
   * when each attempt starts.
   */
  async retried(
    attempt: () => Promise<HttpAnswer | undefined>, giveUpAt: () => boolean, onAttempt: () => void = () => undefined,
  ): Promise<HttpAnswer | undefined> {
    for (let backoff = 100; ; backoff = Math.min(backoff * 2, MAX_BACKOFF_MS)) {
      onAttempt();
      const answer = await attempt();
      if (answer !== undefined && answer.status !== 503) return answer;
      if (giveUpAt()) return undefined;
      await new Promise((resolve) => setTimeout(resolve, backoff));
    }
  }
}
