import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { GovernedMemoryError } from '@gm/contracts';
import type { BrokerDeps } from '../deps.ts';

/** Where `pnpm --filter @gm/console build` (run by scripts/setup.sh) writes the console. */
export const DEFAULT_CONSOLE_DIR = path.resolve(import.meta.dirname, '../../../../apps/console/dist');

const TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml', '.png': 'image/png', '.ico': 'image/x-icon', '.json': 'application/json', '.map': 'application/json',
};

/**
 * The console may load only itself and call only this origin: no inline script, no third
 * party, no framing (a capability pasted into it must not be readable by anything else).
 */
const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; "
    + "form-action 'none'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

/** Every file of the built console, read once at start: requests are served from this map, so no path reaches the disk. */
function loadFiles(dir: string): Map<string, { type: string; body: Buffer }> {
  const files = new Map<string, { type: string; body: Buffer }>();
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const full = path.join(at, name);
      if (statSync(full).isDirectory()) walk(full);
      else files.set(path.relative(dir, full).split(path.sep).join('/'), { type: TYPES[path.extname(name)] ?? 'application/octet-stream', body: readFileSync(full) });
    }
  };
  walk(dir);
  return files;
}

export const consoleBuiltIn = (dir: string): boolean => existsSync(path.join(dir, 'index.html'));

/**
 * The review and compliance console (apps/console) at /console/: static files that speak only
 * the public API (docs/console.md). Absent when it was not built: /console/ then says how to build it.
 */
export function consoleRoutes(app: FastifyInstance, deps: Pick<BrokerDeps, 'consoleDir'>): void {
  const dir = deps.consoleDir ?? DEFAULT_CONSOLE_DIR;
  const files = consoleBuiltIn(dir) ? loadFiles(dir) : undefined;
  app.get('/console', async (_request, reply) => reply.redirect('/console/', 302));
  app.get('/console/*', async (request, reply) => {
    if (files === undefined) {
      // The detail names no server path: anyone may ask.
      throw new GovernedMemoryError('MEM_NOT_FOUND', 'the console is not built on this server: run pnpm --filter @gm/console build (scripts/setup.sh does), or set MEMORY_CONSOLE_DIR');
    }
    const wanted = (request.params as { '*': string })['*'];
    const found = files.get(wanted === '' ? 'index.html' : wanted);
    // A missing asset is a 404; any other path is the app itself (its router reads the hash).
    if (found === undefined && path.extname(wanted) !== '') throw new GovernedMemoryError('MEM_NOT_FOUND', 'no such console file');
    const file = found ?? files.get('index.html');
    if (file === undefined) throw new GovernedMemoryError('MEM_NOT_FOUND', 'no such console file');
    return reply.headers(SECURITY_HEADERS).type(file.type).send(file.body);
  });
}
