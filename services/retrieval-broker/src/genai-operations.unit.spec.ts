import { describe, expect, it } from 'vitest';
import { OPERATIONS } from '@gm/contracts';
import { genAiOperationOf } from './genai-operations.ts';
import { operationOf } from './authorization.ts';

/** The GenAI operation on a memory route's span (docs/operations.md#traces), from the route as Fastify names it. */
describe('genAiOperationOf', () => {
  it.each([
    ['POST', '/v1/memories', 'upsert_memory'],
    ['POST', '/v1/memories::batch', 'upsert_memory'],
    ['POST', '/v1/memories/:id/promote', 'update_memory'],
    ['POST', '/v1/search', 'search_memory'],
    ['DELETE', '/v1/memories/:id', 'delete_memory'],
    ['POST', '/v1/subjects/:subjectId/forget', 'delete_memory'],
    ['POST', '/v1/grants', undefined],
  ])('%s %s → %s', (method, route, expected) => {
    expect(genAiOperationOf(operationOf(method, route))).toBe(expected);
  });

  it('names only routes of the operations table', () => {
    for (const [method, route] of [['POST', '/v1/memories'], ['POST', '/v1/memories::batch'], ['POST', '/v1/memories/:id/reject'], ['GET', '/v1/subjects/:subjectId/summary']]) {
      const { method: m, path } = operationOf(method!, route!);
      expect(Object.keys(OPERATIONS)).toContain(`${m} ${path}`);
    }
  });
});
