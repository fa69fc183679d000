import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { LIMITS } from '@gm/contracts';
import { EXAMPLES } from './openapi-examples.ts';
import { openApiDocument } from './openapi.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

interface Response { content?: Record<string, { schema?: unknown }>; links?: Record<string, { operationId: string }> }
interface Operation { operationId: string; parameters?: Array<{ name: string; in: string; schema: Record<string, unknown> }>; requestBody?: { required: boolean }; responses: Record<string, Response> }
const doc = openApiDocument() as unknown as { paths: Record<string, Record<string, Operation>> };
const operations = Object.entries(doc.paths).flatMap(([p, methods]) => Object.entries(methods).map(([method, op]) => ({ path: p, method, op })));

describe('the OpenAPI document', () => {
  it('passes `redocly lint` under the repository\'s redocly.yaml', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gm-openapi-'));
    try {
      const file = path.join(dir, 'openapi.json');
      writeFileSync(file, JSON.stringify(doc, null, 2));
      const lint = spawnSync(path.join(ROOT, 'node_modules/.bin/redocly'), ['lint', '--config', path.join(ROOT, 'redocly.yaml'), file], {
        cwd: ROOT, encoding: 'utf8', timeout: 60_000,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
      });
      expect(lint.status, `redocly lint failed:\n${lint.stdout}\n${lint.stderr}`).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // What the two rules redocly.yaml turns off would check, for every operation they would not flag wrongly.
  it('gives every operation but the /docs redirect a 2xx answer, and no path but the rendered page a trailing slash', () => {
    expect(operations.filter(({ path: p, op }) => p !== '/docs' && !Object.keys(op.responses).some((s) => s.startsWith('2'))).map((o) => o.op.operationId)).toEqual([]);
    expect(Object.keys(doc.paths).filter((p) => p.endsWith('/'))).toEqual(['/docs/']);
  });

  it('declares every status, with no catch-all `default`, and every error as problem+json', () => {
    for (const { op } of operations) {
      expect(op.responses, op.operationId).not.toHaveProperty('default');
      for (const [status, response] of Object.entries(op.responses)) {
        if (Number(status) >= 400) expect(Object.keys(response.content ?? {}), `${op.operationId} ${status}`).toContain('application/problem+json');
      }
    }
  });

  it('declares the constraints the server enforces on ids and headers', () => {
    const idSchema = { type: 'string', minLength: 1, maxLength: LIMITS.maxIdLength, pattern: '^(?!\\.{1,2}$)[A-Za-z0-9._:@-]+$' };
    for (const { path: p, op } of operations) {
      for (const parameter of op.parameters ?? []) {
        if (parameter.name === 'Idempotency-Key') expect(parameter.schema, op.operationId).toEqual(idSchema);
        if (parameter.name === 'Consistency-Token') expect(parameter.schema.pattern, op.operationId).toBeTypeOf('string');
        // The summary answers {items: []} for any subject that is not an id, so it declares no pattern.
        if (parameter.in === 'path') {
          expect(parameter.schema, `${op.operationId} ${parameter.name}`).toEqual(p.endsWith('/summary') ? { type: 'string', minLength: 1, maxLength: LIMITS.maxIdLength } : idSchema);
        }
      }
    }
    // Every route that reads Idempotency-Key (http.ts idempotencyKey) declares it.
    const keyed = operations.filter(({ op }) => op.parameters?.some((p) => p.name === 'Idempotency-Key')).map(({ op }) => op.operationId).sort();
    expect(keyed).toEqual(['deleteMemory', 'forgetSubject', 'promoteMemory', 'rejectMemory', 'writeMemory']);
  });

  it('offers no `trust: verified` on a write, no `visibility` on a reject (a reason code instead), and no required body on the revoke routes', () => {
    const schemas = (openApiDocument() as unknown as { components: { schemas: Record<string, { properties: Record<string, { enum?: string[] }> }> } }).components.schemas;
    expect(schemas.WriteMemoryRequest?.properties.trust?.enum).toEqual(['untrusted', 'trusted']);
    expect(Object.keys(schemas.RejectRequest?.properties ?? {})).toEqual(['expectedVersion', 'reason']);
    expect(schemas.RejectRequest?.properties.reason?.enum).toEqual(['injected-instruction', 'inaccurate', 'sensitive', 'duplicate', 'out-of-scope', 'other']);
    expect(Object.keys(schemas.PromoteRequest?.properties ?? {})).toEqual(['expectedVersion', 'visibility']);
    for (const id of ['revokeDelegation', 'revokeCapability', 'revokeAgent']) {
      expect(operations.find(({ op }) => op.operationId === id)?.op.requestBody?.required, id).toBe(false);
    }
  });

  it('links create → read → delete → deletion job → receipt, to operations that exist', () => {
    const ids = new Set(operations.map(({ op }) => op.operationId));
    const linksOf = (operationId: string, status: string) =>
      Object.values(operations.find(({ op }) => op.operationId === operationId)?.op.responses[status]?.links ?? {}).map((l) => l.operationId);
    expect(linksOf('writeMemory', '201')).toEqual(expect.arrayContaining(['getMemory', 'deleteMemory']));
    expect(linksOf('deleteMemory', '202')).toEqual(['getDeletionJob']);
    expect(linksOf('getDeletionJob', '200')).toEqual(['getDeletionReceipt']);
    for (const { op } of operations) {
      for (const response of Object.values(op.responses)) {
        for (const l of Object.values(response.links ?? {})) expect(ids, `${op.operationId} links ${l.operationId}`).toContain(l.operationId);
      }
    }
  });

  it('shows examples that the zod contracts accept', () => {
    for (const [name, { schema, value }] of Object.entries(EXAMPLES)) {
      const parsed = schema.safeParse(value);
      expect(parsed.success, `${name}: ${JSON.stringify(parsed.error?.issues)}`).toBe(true);
    }
  });
});
