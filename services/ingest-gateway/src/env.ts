import { z } from 'zod';
import { DistributedEnv, WithInstanceId, WithMasterKeys, WithPolicy, WithRateLimit, WithRedis, WithSemantic, WithSigningKey, integer } from '@gm/config';

/** The ingest-gateway's environment (main.ts); `pnpm docs:config` renders it into docs/distributed.md. */
export const IngestGatewayEnv = DistributedEnv.extend({
  ...WithRedis.shape,
  ...WithMasterKeys.shape,
  ...WithPolicy.shape,
  // Only the key pair's public half is used: the gateway verifies capabilities, it issues none.
  ...WithSigningKey.shape,
  ...WithInstanceId.shape,
  // Which model a request's own embedding must come from (none is loaded).
  ...WithSemantic.shape,
  // Producer proofs (docs/ingest.md#producer-proofs): the window bounds both a message's wait and the replay store's size.
  MEMORY_INGEST_PROOF_WINDOW_SECONDS: integer(300, 10, 900).meta({
    description: 'how far a memory.ingest message\'s producer proof may be signed from the gateway\'s time; a message read later than this is dead-lettered (`CAP_PROOF_STALE`), and each proof is remembered in Redis for twice this to refuse copies (`CAP_PROOF_REPLAYED`)',
  }),
  MEMORY_INGEST_UNBOUND_CAPABILITIES: z.enum(['accept', 'refuse']).optional().meta({
    description: '`refuse`: memory.ingest takes only capabilities bound to a producer key (`CAP_KEY_REQUIRED` otherwise); `accept`: bearer capabilities in the `capability` header too, the old form, replayable by anyone who reads the topic — only while producers migrate',
    whenUnset: '`refuse` with `MEMORY_PRODUCTION=true`, else `accept`',
  }),
  // The HTTP edge's limit per verified principal, counted in Redis across the instances.
  ...WithRateLimit.shape,
});
