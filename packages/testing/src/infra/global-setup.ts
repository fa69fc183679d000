import { containerRuntimeAnswers, startContainerEngines } from './containers.ts';
import { LOCAL_ENDPOINTS, startLocalEngines, type Engine } from './engines.ts';

const ENGINES = (process.env.GM_ENGINES ?? 'redis,kafka,elasticsearch').split(',').filter(Boolean) as Engine[];

/**
 * Vitest global setup of the `engines` project: makes every engine reachable before any
 * suite runs and exports its endpoint, in the order of design §11 — engines named by env
 * URLs as they are, else containers when a container runtime answers, else the local
 * launcher. Returns the teardown that stops the containers it started.
 */
export default async function setup(): Promise<() => Promise<void>> {
  const missing = ENGINES.filter((engine) => !process.env[LOCAL_ENDPOINTS[engine].env]);
  let teardown: () => Promise<void> = async () => {};
  if (missing.length > 0 && (await containerRuntimeAnswers())) {
    const containers = await startContainerEngines(missing);
    teardown = () => containers.stop();
  } else {
    startLocalEngines(missing);
  }
  for (const engine of ENGINES) process.stderr.write(`[engines] ${engine}: ${process.env[LOCAL_ENDPOINTS[engine].env]}\n`);
  return teardown;
}
