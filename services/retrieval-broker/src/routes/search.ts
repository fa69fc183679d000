import type { FastifyInstance } from 'fastify';
import { SearchRequest } from '@gm/contracts';
import { authorized } from '../authorization.ts';
import { READ_YOUR_WRITES_GROUPS, SEMANTIC_READ_GROUPS } from '../command-gateway.ts';
import { awaitConsistency } from '../consistency.ts';
import type { BrokerDeps } from '../deps.ts';
import { parseBody } from '../http.ts';
import { notFound } from '../problem.ts';
import { search, searchModeOf, validatePacket } from '../retrieval.ts';
import { VectorVisibility } from '../vector-visibility.ts';

export function searchRoutes(app: FastifyInstance, deps: BrokerDeps): void {
  const retrieval = { ...deps, packetTtlMs: deps.config.packetTtlMs, cacheTtlMs: deps.config.cacheTtlMs };
  const vectorVisibility = deps.semantic && new VectorVisibility(deps.semantic.vectors);

  app.post('/v1/search', async (request) => {
    const { claims } = authorized(request, 'partitions');
    const body = parseBody(SearchRequest, request.body);
    const mode = searchModeOf(deps, body);
    // A semantic search waits for the vectors; a hybrid one for the keyword index, which its
    // lexical leg reads (the token's writes are found; vectors lag under load, docs/embedding.md).
    const passed = await awaitConsistency(deps, request, claims.tenant, mode === 'semantic' ? SEMANTIC_READ_GROUPS : READ_YOUR_WRITES_GROUPS);
    // The vector-indexer commits before its vectors are visible (they wait for a refresh).
    if (passed !== undefined && mode === 'semantic') await vectorVisibility?.after(passed);
    return search(retrieval, claims, body, deps.clock.now());
  });

  app.post('/v1/packets/:id/validate', async (request) => {
    const { claims, packetId } = authorized(request, 'packet');
    const result = await validatePacket(retrieval, claims, packetId, deps.clock.now());
    if (!result) throw notFound();
    return result;
  });
}
