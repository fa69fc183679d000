import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { IngestRequest } from './ingest.ts';
import { topicJsonSchemas } from './json-schema.ts';

const docs = new URL('../../../docs/schemas/', import.meta.url);

describe('the topics\' JSON Schemas in docs/schemas', () => {
  it('are exactly what the zod contracts generate (run `pnpm schemas` after changing a contract)', () => {
    for (const [file, schema] of Object.entries(topicJsonSchemas())) {
      expect(JSON.parse(readFileSync(new URL(file, docs), 'utf8')), file).toEqual(schema);
    }
  });

  it('say what the gateway enforces: a requestId, no unknown fields, the capability outside the value', () => {
    const schema = topicJsonSchemas()['memory.ingest.schema.json'] as { required: string[]; additionalProperties: boolean; properties: Record<string, unknown> };
    expect(schema.required).toEqual(expect.arrayContaining(['requestId', 'subjectId', 'resource', 'kind', 'content', 'provenance', 'trust']));
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties).not.toHaveProperty('capability');
    // And the zod contract behind it refuses a request without its requestId.
    expect(IngestRequest.safeParse({ subjectId: 's', resource: { kind: 'project', id: 'p' }, kind: 'fact', content: 'c', provenance: [{ source: 'tool', observedAt: '2026-01-01T00:00:00.000Z' }], trust: 'trusted' }).success).toBe(false);
  });
});
