import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { LOCAL_ENDPOINTS, type Engine } from './engines.ts';

const ROOT = path.resolve(import.meta.dirname, '../../../..');
const ENGINES = (process.env.GM_ENGINES ?? 'redis,kafka,elasticsearch').split(',').filter(Boolean) as Engine[];

/**
 * Vitest global setup of the `engines` project: makes every engine reachable before any
 * suite runs and exports its endpoint. Engines named by env URLs are used as they are; the
 * others are started with the local launcher (which returns at once when already running).
 */
export default function setup(): void {
  const toStart = ENGINES.filter((engine) => !process.env[LOCAL_ENDPOINTS[engine].env]);
  if (toStart.length > 0) {
    process.stderr.write(`[engines] starting with infra/local/engines.sh: ${toStart.join(', ')}\n`);
    const started = spawnSync('bash', [path.join(ROOT, 'infra/local/engines.sh'), 'start', ...toStart], {
      cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'], timeout: 15 * 60_000,
    });
    if (started.status !== 0) {
      throw new Error(`the local engines did not start (${toStart.join(', ')}): see the output above — engine suites are never skipped`);
    }
    for (const engine of toStart) process.env[LOCAL_ENDPOINTS[engine].env] = LOCAL_ENDPOINTS[engine].value;
  }
  for (const engine of ENGINES) process.stderr.write(`[engines] ${engine}: ${process.env[LOCAL_ENDPOINTS[engine].env]}\n`);
}
