import { describe, expect, it } from 'vitest';
import { OPERATIONS, guardOf } from '@gm/contracts';
import { documentPath, operationOf } from './authorization.ts';
import { openApiDocument } from './openapi.ts';

const doc = openApiDocument() as unknown as { paths: Record<string, Record<string, { operationId: string; 'x-authorization': unknown }>> };
const documented = Object.entries(doc.paths).flatMap(([path, methods]) =>
  Object.entries(methods).map(([method, op]) => ({ key: `${method.toUpperCase()} ${documentPath(path)}`, op })));

describe('the authorization table (design §9.1)', () => {
  it('declares every operation of the OpenAPI document', () => {
    const undeclared = documented.filter(({ key }) => !(key in OPERATIONS)).map(({ key, op }) => `${op.operationId} (${key})`);
    expect(undeclared, 'operations without an authorization declaration').toEqual([]);
  });

  it('is what the document says of each operation, never a restatement', () => {
    for (const { key, op } of documented) expect(op['x-authorization'], key).toEqual((OPERATIONS as Record<string, unknown>)[key]);
  });

  it('declares nothing the API does not serve (the ingest-gateway\'s edge aside)', () => {
    const served = new Set(documented.map((d) => d.key));
    // The console's files are served outside the document, like the page they make up.
    const extra = Object.keys(OPERATIONS).filter((k) => !served.has(k) && !k.startsWith('KAFKA ') && !k.includes(' /console'));
    expect(extra).toEqual([]);
  });

  it('asks for a capability on every /v1 operation but capability issue, the public receipt keys and the runtime\'s proof', () => {
    const open = Object.entries(OPERATIONS).filter(([k, g]) => k.includes(' /v1/') && g.auth !== 'capability').map(([k]) => k);
    expect(open.sort()).toEqual(['GET /v1/receipt-keys', 'GET /v1/runtime-proof', 'POST /v1/capabilities']);
  });

  it('maps Fastify route paths onto the table\'s, so the hook finds each route\'s declaration', () => {
    expect(operationOf('GET', '/v1/memories/:id/history')).toEqual({ method: 'GET', path: '/v1/memories/{id}/history' });
    expect(operationOf('POST', '/v1/memories::batch')).toEqual({ method: 'POST', path: '/v1/memories:batch' });
    expect(operationOf('HEAD', '/console/*')).toEqual({ method: 'GET', path: '/console/{path}' });
    expect(operationOf('GET', '/docs/js/scalar.js')).toEqual({ method: 'GET', path: '/docs/{path}' });
    expect(guardOf('POST', '/v1/subjects/{subjectId}/forget')).toEqual({ auth: 'capability', actions: ['request_delete'], on: 'subject' });
    expect(guardOf('PUT', '/v1/memories/{id}')).toBeUndefined();
  });
});
