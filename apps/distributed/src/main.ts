import path from 'node:path';
import { startStack } from './stack.ts';

/**
 * `pnpm start:distributed`: the local engines (Kafka, Elasticsearch, Redis) and every service
 * as its own process. Same API as `pnpm start`, on MEMORY_PORT (default 8080).
 */
const dataDir = path.resolve(process.env.MEMORY_DATA_DIR ?? '.data-distributed');
const port = Number(process.env.MEMORY_PORT ?? 8080);
const started = performance.now();
const stack = await startStack({
  dataDir, port, namespace: process.env.MEMORY_NAMESPACE ?? '',
  onLine: (service, line) => process.stderr.write(`[${service}] ${line}\n`),
});
process.stderr.write(
  [
    '',
    `governed memory (distributed runtime) listening on ${stack.url}`,
    `services:          ${[...stack.children.entries()].map(([name, cs]) => `${name}(pid ${cs.map((c) => c.pid).join(',')})`).join(', ')}`,
    `issuer credential: ${path.join(dataDir, 'issuer-credential')}`,
    `started in ${Math.round(performance.now() - started)} ms — Ctrl-C stops the services (engines keep running: infra/local/engines.sh stop)`,
    '',
  ].join('\n'),
);
const stop = () => void stack.stop().then(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
