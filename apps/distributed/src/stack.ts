import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DEPLOYED_SERVICES, serviceCommand, type DeployedService } from '@gm/contracts';
import { loadOrCreateCredentials, loadOrCreateMasterKeys } from '@gm/embedded';
import { LOCAL_ENDPOINTS, engineEnv, startLocalEngines, type Engine } from '@gm/testing';

const ROOT = path.resolve(import.meta.dirname, '../../..');

/** The nine services, in start order (one definition, with the chart's: @gm/contracts). */
export const SERVICES = DEPLOYED_SERVICES;
export type ServiceName = DeployedService;

/** The services a stack with this env runs: without semantic retrieval (MEMORY_SEMANTIC=off) there are no vectors to keep. */
export const servicesOf = (env: Record<string, string | undefined>): ServiceName[] =>
  SERVICES.filter((s) => s !== 'vector-indexer' || env.MEMORY_SEMANTIC !== 'off');

export interface StackOptions {
  dataDir: string;
  port: number;
  /** Isolates topics, keys and indices of this stack on shared engines. */
  namespace: string;
  env?: Record<string, string>;
  /** Receives every child's stderr line, prefixed with the service name. */
  onLine?: (service: ServiceName, line: string) => void;
  /** Instances per service at start (default 1 each): a consumer group's members split its partitions. */
  instances?: Partial<Record<ServiceName, number>>;
}

export interface Stack {
  url: string;
  /** Running instances per service (scale a consumer group by starting another). */
  children: Map<ServiceName, ChildProcess[]>;
  env: Record<string, string>;
  /** The `/metrics` URL of the oldest running instance of a service (the broker's is on its API port). */
  metricsUrl(service: ServiceName): string | undefined;
  /** Starts one more instance of a service and waits until it is ready. */
  start(service: ServiceName): Promise<void>;
  /** Signals every instance of a service and waits until they exited. */
  kill(service: ServiceName, signal: NodeJS.Signals): Promise<void>;
  /** Signals the oldest running instance of a service (scaling in) and waits until it exited. */
  killOne(service: ServiceName, signal: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
}

/** Starts the engines the env does not name, with the local launcher (design §11); returns the env that names them all. */
export function ensureEngines(): Record<string, string> {
  startLocalEngines(Object.keys(LOCAL_ENDPOINTS) as Engine[]);
  return engineEnv();
}

/**
 * Every service as its own process on Kafka, Elasticsearch and Redis. Each child is started
 * exactly as the chart runs it (`serviceCommand`) and awaited until it says ready.
 */
export async function startStack(options: StackOptions): Promise<Stack> {
  const engines = ensureEngines();
  mkdirSync(options.dataDir, { recursive: true });
  const credentials = await loadOrCreateCredentials(options.dataDir, undefined);
  const keyFile = path.join(options.dataDir, 'keys', 'capability-signing.jwk.json');
  const credentialFile = credentials.issuerCredentialFile ?? path.join(options.dataDir, 'issuer-credential');
  if (!credentials.issuerCredentialFile) writeFileSync(credentialFile, credentials.issuerCredential, { mode: 0o600 });
  // One master key file for every service (content encryption, §8.5), unless the env names one.
  const masterKeyEnv: Record<string, string> = options.env?.MEMORY_MASTER_KEY !== undefined || options.env?.MEMORY_MASTER_KEY_FILE !== undefined
    ? {}
    : { MEMORY_MASTER_KEY_FILE: loadOrCreateMasterKeys(options.dataDir, {}, false).source };
  const env: Record<string, string> = {
    ...engines,
    MEMORY_NAMESPACE: options.namespace,
    MEMORY_PORT: String(options.port),
    MEMORY_SIGNING_KEY_FILE: keyFile,
    MEMORY_RECEIPT_KEY_FILE: credentials.receiptKeyFile,
    MEMORY_ISSUER_CREDENTIAL_FILE: credentialFile,
    MEMORY_LOG_LEVEL: 'warn',
    ...masterKeyEnv,
    ...options.env,
  };
  const children = new Map<ServiceName, ChildProcess[]>();
  /** Each running service's /metrics, from its ready line. */
  const metricsUrls = new Map<ChildProcess, string>();
  let url = '';

  const start = (service: ServiceName) =>
    new Promise<void>((resolve, reject) => {
      // The broker's ops overview reads every service started before it (unless the env names its own list).
      const opsEnv = service === 'retrieval-broker' && env.MEMORY_OPS_METRICS_URLS === undefined && metricsUrls.size > 0
        ? { MEMORY_OPS_METRICS_URLS: [...metricsUrls.values()].join(',') } : {};
      const child = spawn(process.execPath, serviceCommand(service).slice(1), {
        cwd: ROOT, env: { ...process.env, ...env, ...opsEnv }, stdio: ['ignore', 'pipe', 'pipe'],
      });
      // stdout carries the JSON logs: forwarded line by line, so a failed start explains itself.
      let logBuffer = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        logBuffer += chunk.toString();
        let nl: number;
        while ((nl = logBuffer.indexOf('\n')) >= 0) {
          remember(logBuffer.slice(0, nl));
          options.onLine?.(service, logBuffer.slice(0, nl));
          logBuffer = logBuffer.slice(nl + 1);
        }
      });
      children.set(service, [...(children.get(service) ?? []), child]);
      let buffer = '';
      let ready = false;
      const recent: string[] = [];
      const remember = (line: string) => {
        recent.push(line);
        if (recent.length > 20) recent.shift();
      };
      child.stderr?.on('data', (chunk: Buffer) => {
        buffer += chunk.toString();
        let nl: number;
        while ((nl = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          remember(line);
          options.onLine?.(service, line);
          const listening = /retrieval-broker listening on (\S+)/.exec(line);
          if (listening?.[1]) url = listening[1];
          const health = new RegExp(`^${service} ready: health on (\\S+)`).exec(line);
          if (health?.[1] && service !== 'retrieval-broker') metricsUrls.set(child, `${health[1]}/metrics`);
          if (!ready && line.startsWith(`${service} ready`)) {
            ready = true;
            resolve();
          }
        }
      });
      child.on('exit', (code) => {
        metricsUrls.delete(child);
        if (!ready) reject(new Error(`${service} exited with ${code} before it was ready:\n${[...recent, buffer, logBuffer].join('\n')}`));
      });
    });

  const runningOf = (service: ServiceName) => (children.get(service) ?? []).filter((c) => c.exitCode === null && c.signalCode === null);
  const signalAndWait = (child: ChildProcess, signal: NodeJS.Signals) => {
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    child.kill(signal);
    return exited;
  };
  const stack: Stack = {
    get url() {
      return url;
    },
    children,
    env,
    metricsUrl(service) {
      if (service === 'retrieval-broker') return url === '' ? undefined : `${url}/metrics`;
      const [oldest] = runningOf(service);
      return oldest === undefined ? undefined : metricsUrls.get(oldest);
    },
    start,
    async kill(service, signal) {
      await Promise.all(runningOf(service).map((child) => signalAndWait(child, signal)));
      children.set(service, []);
    },
    async killOne(service, signal) {
      const [oldest] = runningOf(service);
      if (oldest === undefined) throw new Error(`no running instance of ${service}`);
      await signalAndWait(oldest, signal);
      children.set(service, (children.get(service) ?? []).filter((c) => c !== oldest));
    },
    async stop() {
      // The API first, so nothing new comes in; then the rest together, each leaving its groups.
      await stack.kill('retrieval-broker', 'SIGTERM');
      await Promise.all(SERVICES.filter((s) => s !== 'retrieval-broker').map((s) => stack.kill(s, 'SIGTERM')));
    },
  };
  const instancesOf = (service: ServiceName) => Array.from({ length: options.instances?.[service] ?? 1 }, () => service);
  const [first, ...others] = servicesOf({ ...process.env, ...env }).filter((s) => s !== 'retrieval-broker');
  try {
    // write-admission first, alone: it creates the namespace's topics, which every other service
    // then finds. The others start together (each spends most of its start waiting on Kafka's
    // group joins), and the broker last: its ops overview reads the metrics of those before it.
    if (first !== undefined) for (const service of instancesOf(first)) await start(service);
    await Promise.all(others.flatMap(instancesOf).map(start));
    for (const service of instancesOf('retrieval-broker')) await start(service);
  } catch (err) {
    // Never leave half a stack running behind a failed start.
    await stack.stop();
    throw err;
  }
  return stack;
}
