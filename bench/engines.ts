import net from 'node:net';
import { ensureEngines } from '@gm/distributed';
import { LOCAL_ENDPOINTS } from '@gm/testing';

export interface Engines {
  kafkaBrokers: string;
  redisUrl: string;
  elasticsearchUrl: string;
}

function answers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: 1_000 });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.once('connect', () => done(true)).once('timeout', () => done(false)).once('error', () => done(false));
  });
}

const hostPort = (value: string): [string, number] => {
  const url = new URL(value.includes('://') ? value : `tcp://${value.split(',')[0] ?? value}`);
  return [url.hostname, Number(url.port)];
};

/**
 * The engines to measure: the env URLs when set, else the local launcher's endpoints. Only an
 * engine that does not answer is started (infra/local/engines.sh start <name>), and it is
 * left running; the env is then set so startStack uses the same engines without asking again.
 */
export async function resolveEngines(): Promise<Engines> {
  for (const { env, value } of Object.values(LOCAL_ENDPOINTS)) {
    if (process.env[env] === undefined && (await answers(...hostPort(value)))) process.env[env] = value;
  }
  const endpoints = ensureEngines();
  for (const [name, value] of Object.entries(endpoints)) process.env[name] = value;
  return {
    kafkaBrokers: endpoints[LOCAL_ENDPOINTS.kafka.env] ?? LOCAL_ENDPOINTS.kafka.value,
    redisUrl: endpoints[LOCAL_ENDPOINTS.redis.env] ?? LOCAL_ENDPOINTS.redis.value,
    elasticsearchUrl: endpoints[LOCAL_ENDPOINTS.elasticsearch.env] ?? LOCAL_ENDPOINTS.elasticsearch.value,
  };
}
