import type { FastifyInstance } from 'fastify';
import { authenticate } from '../auth.ts';
import { SUMMARY_GROUPS, awaitConsistency } from '../consistency.ts';
import type { BrokerDeps } from '../deps.ts';
import { pathId } from '../http.ts';
import { subjectSummaries } from '../summaries.ts';

export function summaryRoutes(app: FastifyInstance, deps: BrokerDeps): void {
  // Action `search`: a summary is a derived search result, governed by the same partitions.
  app.get('/v1/subjects/:subjectId/summary', async (request) => {
    const claims = await authenticate(request, deps.verifier, deps.clock, 'search');
    const subjectId = pathId(request, 'subjectId');
    await awaitConsistency(deps, request, claims.tenant, SUMMARY_GROUPS);
    return subjectSummaries(deps, claims, subjectId, deps.clock.now());
  });
}
