import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { isGovernedMemoryError } from '@gm/contracts';
import { consoleRoutes } from './console.ts';

/** An app with only the console routes; a refusal answers its code, as the broker's error handler does. */
async function appServing(consoleDir: string) {
  const app = Fastify();
  app.setErrorHandler((err: Error, _request, reply) => reply.code(isGovernedMemoryError(err) ? 404 : 500).send({ code: isGovernedMemoryError(err) ? err.code : 'other', detail: err.message }));
  consoleRoutes(app, { consoleDir });
  await app.ready();
  return app;
}

describe('the console routes', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'gm-console-'));
  const dir = path.join(root, 'dist');
  mkdirSync(path.join(dir, 'assets'), { recursive: true });
  writeFileSync(path.join(root, 'secret.txt'), 'not part of the build');
  writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>console</title>');
  writeFileSync(path.join(dir, 'assets', 'app-1.js'), 'export {};');
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('serves the built files with a policy that loads only this origin, and the page for any other path', async () => {
    const app = await appServing(dir);
    const script = await app.inject('/console/assets/app-1.js');
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(script.headers['content-security-policy']).toContain("script-src 'self'");
    expect(script.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    for (const url of ['/console/', '/console/jobs/anything']) {
      const page = await app.inject(url);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('<title>console</title>');
    }
    expect((await app.inject('/console')).headers.location).toBe('/console/');
    await app.close();
  });

  it('answers a missing file, or a path outside the build, with 404 and never reads the disk for it', async () => {
    const app = await appServing(dir);
    expect((await app.inject('/console/assets/missing.js')).statusCode).toBe(404);
    for (const url of ['/console/../secret.txt', '/console/%2e%2e/secret.txt', '/console/assets/..%2f..%2fsecret.txt']) {
      const res = await app.inject(url);
      expect(res.statusCode, url).toBe(404);
      expect(res.body).not.toContain('not part of the build');
    }
    await app.close();
  });

  it('says how to build the console when it was not built', async () => {
    const app = await appServing(path.join(dir, 'nowhere'));
    const res = await app.inject('/console/');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ code: 'MEM_NOT_FOUND', detail: expect.stringContaining('pnpm --filter @gm/console build') });
    await app.close();
  });
});
