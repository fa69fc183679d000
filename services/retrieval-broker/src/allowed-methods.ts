import type { FastifyInstance } from 'fastify';

/**
 * Which methods each registered path serves, so that a request with another method answers
 * 405 with `Allow` (RFC 9110, section 15.5.6) instead of the 404 of a path that does not exist.
 * Collected from Fastify's onRoute hook: register it before the routes.
 */
export function allowedMethods(app: FastifyInstance): (path: string) => string[] {
  const routes: Array<{ pattern: RegExp; methods: string[] }> = [];
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    routes.push({ pattern: patternOf(route.url), methods });
  });
  return (path) => {
    const methods = new Set(routes.filter((r) => r.pattern.test(path)).flatMap((r) => r.methods));
    return [...methods].sort();
  };
}

/** A Fastify path as a regular expression: `:name` is one segment, `::` a literal colon, `*` the rest. */
function patternOf(url: string): RegExp {
  let source = '';
  for (let i = 0; i < url.length; i += 1) {
    const c = url[i] ?? '';
    if (c === ':' && url[i + 1] === ':') {
      source += ':';
      i += 1;
    } else if (c === ':') {
      while (i + 1 < url.length && /[A-Za-z0-9_]/.test(url[i + 1] ?? '')) i += 1;
      source += '[^/]+';
    } else if (c === '*') {
      source += '.*';
    } else {
      source += c.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
    }
  }
  return new RegExp(`^${source}$`);
}
