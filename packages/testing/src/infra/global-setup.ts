import { LOCAL_ENDPOINTS, startLocalEngines, type Engine } from './engines.ts';

const ENGINES = (process.env.GM_ENGINES ?? 'redis,kafka,elasticsearch').split(',').filter(Boolean) as Engine[];

/**
 * Vitest global setup of the `engines` project: makes every engine reachable before any
 * suite runs and exports its endpoint. Engines named by env URLs are used as they are; the
 * others are started with the local launcher.
 */
export default function setup(): void {
  startLocalEngines(ENGINES);
  for (const engine of ENGINES) process.stderr.write(`[engines] ${engine}: ${process.env[LOCAL_ENDPOINTS[engine].env]}\n`);
}
