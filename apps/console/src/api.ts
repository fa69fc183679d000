import type { Problem } from './api-types.ts';
import { isObject } from './base64url.ts';
import { currentSession } from './session.ts';

/**
 * A non-2xx answer of the API (its problem+json), or a request that got no answer. The
 * console shows it as it came; it never decides on its own what the server would have said.
 */
export class ApiProblem extends Error {
  readonly problem: Problem;

  constructor(problem: Problem) {
    super(`${problem.code}: ${problem.title}`);
    this.name = 'ApiProblem';
    this.problem = problem;
  }

  get status(): number {
    return this.problem.status;
  }

  get code(): string {
    return this.problem.code;
  }
}

/** Anything thrown, as a problem to show (a bug in the console too: never swallowed). */
export function asProblem(err: unknown): Problem {
  if (err instanceof ApiProblem) return err.problem;
  const detail = err instanceof Error ? err.message : String(err);
  return { type: 'about:blank', title: 'The console failed', status: 0, code: 'CONSOLE_ERROR', detail };
}

interface RequestOptions {
  method?: 'GET' | 'POST';
  body?: unknown;
  /** Public routes (the receipt keys) are asked without the capability. */
  anonymous?: boolean;
}

/** A call of the API on this origin (`/v1/...`), with the signed-in capability as bearer. */
export async function api<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json, application/problem+json' };
  const session = currentSession();
  if (!options.anonymous && session !== null) headers.authorization = `Bearer ${session.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(path, {
      method: options.method ?? 'GET',
      headers,
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      credentials: 'omit',
      cache: 'no-store',
    });
  } catch (err) {
    throw new ApiProblem({
      type: 'about:blank', title: 'No answer from the server', status: 0, code: 'NETWORK_ERROR', detail: err instanceof Error ? err.message : String(err),
    });
  }
  const text = await response.text();
  const body = parseJson(text);
  if (!response.ok) throw new ApiProblem(problemOf(response, body, text));
  return body as T;
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The answer's problem+json; an answer that is not one (a proxy's page) still becomes a problem. */
function problemOf(response: Response, body: unknown, text: string): Problem {
  if (isObject(body) && typeof body.title === 'string' && typeof body.code === 'string') {
    return {
      type: typeof body.type === 'string' ? body.type : 'about:blank',
      title: body.title,
      status: typeof body.status === 'number' ? body.status : response.status,
      code: body.code,
      detail: typeof body.detail === 'string' ? body.detail : '',
      ...(typeof body.requestId === 'string' ? { requestId: body.requestId } : {}),
    };
  }
  return {
    type: 'about:blank',
    title: response.statusText || `HTTP ${response.status}`,
    status: response.status,
    code: `HTTP_${response.status}`,
    detail: text.slice(0, 200) || 'the answer was not problem+json',
  };
}

export const encodeId = (id: string): string => encodeURIComponent(id);
