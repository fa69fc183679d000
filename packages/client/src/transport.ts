import { Problem } from '@gm/contracts';
import { MemoryApiError, MemoryNetworkError, retryAfterMs } from './errors.ts';

/** A capability and when it stops working, as the issuer answered it. */
export interface IssuedToken {
  token: string;
  expiresAt: string | Date;
}

/**
 * Where the client gets its capability: a fixed token, or a callback asked again shortly
 * before the last one expires (and once more when the server says it expired). The client
 * never holds an issuer credential unless the callback does.
 */
export type CapabilitySource = string | (() => Promise<IssuedToken>);

export interface RetryPolicy {
  /** Sends in all, the first included (1 = never retry). */
  attempts: number;
  /** Backoff before the n-th retry: a random delay up to min(maxDelayMs, baseDelayMs × 2^(n-1)) (full jitter). */
  baseDelayMs: number;
  maxDelayMs: number;
}

export interface ClientOptions {
  /** Where the API is, e.g. http://127.0.0.1:8080 (no trailing /v1). */
  baseUrl: string;
  capability: CapabilitySource;
  retry?: Partial<RetryPolicy>;
  /** Per send; a timed-out send is retried like a lost connection where retrying is safe. */
  timeoutMs?: number;
  /** A provider's token is renewed once it has less than this left (default 30 s). */
  refreshMarginMs?: number;
  fetch?: typeof fetch;
  /** The clock the refresh margin is judged by (tests). */
  now?: () => number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 4, baseDelayMs: 100, maxDelayMs: 2_000 };

/** One request as the route methods describe it. */
export interface Call {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  body?: unknown;
  headers?: Record<string, string>;
  /**
   * Whether sending it twice does no harm: reads, and mutations that carry an Idempotency-Key
   * (the server answers a repeat with the first result). Only these are retried.
   */
  safeToRetry: boolean;
  /** Sent without a capability (public routes, the issuer's route with its own credential). */
  anonymous?: boolean;
  /** `text`: the body as it came (the bare JWS of a receipt). */
  expect?: 'json' | 'text';
}

export interface Answer<T> {
  status: number;
  body: T;
  headers: Headers;
}

/** Sends calls with the capability, retries what is safe to retry, and turns problem+json into MemoryApiError. */
export class Transport {
  private readonly retry: RetryPolicy;
  private readonly fetchImpl: typeof fetch;
  private readonly now: () => number;
  private cached: { token: string; expiresAtMs: number } | undefined;
  private pending: Promise<string> | undefined;

  constructor(private readonly options: ClientOptions) {
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    if (this.retry.attempts < 1) throw new RangeError('retry.attempts must be at least 1');
    this.fetchImpl = options.fetch ?? fetch;
    this.now = options.now ?? Date.now;
  }

  async send<T>(call: Call): Promise<Answer<T>> {
    const attempts = call.safeToRetry ? this.retry.attempts : 1;
    let refreshed = false;
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.once<T>(call, refreshed);
      } catch (error) {
        // An expired capability is renewed once, whatever the call: the request never ran.
        if (error instanceof MemoryApiError && error.code === 'CAP_EXPIRED' && !refreshed && typeof this.options.capability === 'function') {
          refreshed = true;
          attempt -= 1;
          continue;
        }
        const retriable = (error instanceof MemoryApiError || error instanceof MemoryNetworkError) && error.retriable;
        if (!retriable || attempt >= attempts) throw error;
        await delay(this.backoffMs(attempt, error instanceof MemoryApiError ? error.retryAfterMs : undefined));
      }
    }
  }

  private backoffMs(attempt: number, serverMs: number | undefined): number {
    const ceiling = Math.min(this.retry.maxDelayMs, this.retry.baseDelayMs * 2 ** (attempt - 1));
    // The server's Retry-After when it sent one, bounded by the policy's maximum so one answer cannot stall a caller.
    return serverMs === undefined ? Math.random() * ceiling : Math.min(serverMs, this.retry.maxDelayMs);
  }

  private async once<T>(call: Call, forceRefresh: boolean): Promise<Answer<T>> {
    const headers: Record<string, string> = { accept: 'application/json, application/problem+json', ...call.headers };
    if (!call.anonymous) headers.authorization = `Bearer ${await this.token(forceRefresh)}`;
    let payload: string | undefined;
    if (call.body !== undefined) {
      payload = JSON.stringify(call.body);
      headers['content-type'] = 'application/json';
    }
    let response: Response;
    const url = new URL(call.path, this.options.baseUrl);
    try {
      response = await this.fetchImpl(url, {
        method: call.method, headers, ...(payload === undefined ? {} : { body: payload }),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 30_000),
      });
    } catch (cause) {
      // Where it tried and why (the socket's code, e.g. ECONNREFUSED, rather than undici's "fetch failed").
      const why = (cause as { cause?: { code?: string } }).cause?.code ?? (cause as Error).message;
      throw new MemoryNetworkError(`${call.method} ${url.href} got no answer: ${why}`, { cause });
    }
    const text = await response.text();
    if (response.status >= 400) throw problemFrom(response, text);
    const body = (call.expect === 'text' ? text : text === '' ? null : JSON.parse(text)) as T;
    return { status: response.status, body, headers: response.headers };
  }

  private async token(forceRefresh: boolean): Promise<string> {
    const source = this.options.capability;
    if (typeof source === 'string') return source;
    const margin = this.options.refreshMarginMs ?? 30_000;
    if (!forceRefresh && this.cached !== undefined && this.cached.expiresAtMs - margin > this.now()) return this.cached.token;
    // Concurrent calls share one refresh instead of each asking the provider.
    this.pending ??= source().then((issued) => {
      this.cached = { token: issued.token, expiresAtMs: new Date(issued.expiresAt).getTime() };
      return issued.token;
    }).finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }
}

function problemFrom(response: Response, text: string): MemoryApiError {
  const retryAfter = retryAfterMs(response.headers.get('retry-after'), Date.now());
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  const problem = Problem.safeParse(parsed);
  if (problem.success) return new MemoryApiError(problem.data, retryAfter);
  // Not our problem+json (a proxy's error page): keep the status, say so in the code.
  return new MemoryApiError(
    { type: 'about:blank', title: response.statusText || 'Error', status: response.status, code: `HTTP_${response.status}`, detail: 'the answer was not problem+json' },
    retryAfter,
  );
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
