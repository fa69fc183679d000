/**
 * The JSON Schemas of the topics platforms produce to and consume from (docs/ingest.md), generated
 * from the zod contracts so that they cannot drift: docs/schemas/ holds them (`pnpm schemas`
 * writes them; a spec fails when they differ from what this generates).
 */
import { z } from 'zod';
import { IngestRequest, IngestResult } from './ingest.ts';

const withId = (id: string, title: string, description: string, schema: z.ZodType): Record<string, unknown> => ({
  $id: `https://governed-memory.dev/schemas/${id}.schema.json`, title, description,
  // `input`: what a producer may send (defaults may be left out), not what the gateway fills in.
  ...z.toJSONSchema(schema, { io: 'input', target: 'draft-2020-12' }),
});

/** File name (in docs/schemas/) → schema. */
export function topicJsonSchemas(): Record<string, Record<string, unknown>> {
  return {
    'memory.ingest.schema.json': withId('memory.ingest', 'memory.ingest message value',
      'The body of POST /v1/memories plus the producer\'s requestId. The write capability goes in the "capability" header (a compact JWS, no "Bearer").', IngestRequest),
    'memory.ingest.results.schema.json': withId('memory.ingest.results', 'memory.ingest.results.<tenant> message value',
      'Exactly one per memory.ingest request whose capability verified, on its tenant\'s results topic (memory.ingest.results.<tenant>, the tenant id with _ written __ and . written _d), keyed by its requestId and naming the verified tenant and principal: accepted with the record, or rejected with the problem code POST /v1/memories would answer. Take only results naming your own tenant, principal and requestId.', IngestResult),
  };
}
