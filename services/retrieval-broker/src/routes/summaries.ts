import type { FastifyInstance } from 'fastify';
import { Id } from '@gm/contracts';
import { authorized } from '../authorization.ts';
import { SUMMARY_GROUPS, awaitConsistency } from '../consistency.ts';
import type { BrokerDeps } from '../deps.ts';
import { subjectSummaries } from '../summaries.ts';

export function summaryRoutes(app: FastifyInstance, deps: BrokerDeps): void {
  // Action `search`: a summary is a derived search result, governed by the same partitions.
  app.get('/v1/subjects/:subjectId/summary', async (request) => {
    const { claims } = authorized(request, 'partitions');
    const subjectId = Id.safeParse((request.params as { subjectId?: unknown }).subjectId);
    await awaitConsistency(deps, request, claims.tenant, SUMMARY_GROUPS);
    // A string that is not an id names no subject: the same {items: []} as an unknown or unreadable one.
    if (!subjectId.success) return { items: [] };
    return subjectSummaries(deps, claims, subjectId.data, deps.clock.now());
  });
}
