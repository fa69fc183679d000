import { createServer } from 'node:net';
import type { StartedTestContainer } from 'testcontainers';
import { LOCAL_ENDPOINTS, type Engine } from './engines.ts';

/**
 * The second way to the engines (design §11): containers, for developers whose machine runs
 * Docker or Podman. The images are pinned to the versions the local launcher runs.
 */
export const CONTAINER_IMAGES: Record<Engine, string> = {
  redis: 'redis:7.0.15',
  kafka: 'apache/kafka:4.3.1',
  elasticsearch: 'docker.elastic.co/elasticsearch/elasticsearch:9.5.3',
};

/**
 * Whether a container runtime answers. testcontainers probes the Docker host its own way
 * (DOCKER_HOST, ~/.testcontainers.properties, the default sockets); `GM_CONTAINERS=0` skips
 * the probe and goes straight to the local launcher.
 */
export async function containerRuntimeAnswers(): Promise<boolean> {
  if (process.env.GM_CONTAINERS === '0') return false;
  const { getContainerRuntimeClient } = await import('testcontainers');
  try {
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

export interface StartedEngines {
  stop(): Promise<void>;
}

/** Starts a container per engine, sets its env URL, and returns how to stop them all. */
export async function startContainerEngines(engines: readonly Engine[]): Promise<StartedEngines> {
  const started: StartedTestContainer[] = [];
  const stop = async () => {
    await Promise.all(started.map((c) => c.stop().catch(() => undefined)));
  };
  try {
    for (const engine of engines) {
      process.stderr.write(`[engines] starting ${engine} in a container (${CONTAINER_IMAGES[engine]})\n`);
      const { container, endpoint } = await START[engine]();
      started.push(container);
      process.env[LOCAL_ENDPOINTS[engine].env] = endpoint;
    }
  } catch (err) {
    await stop();
    throw new Error(`a container engine did not start: ${(err as Error).message} — engine suites are never skipped`);
  }
  return { stop };
}

type Starter = () => Promise<{ container: StartedTestContainer; endpoint: string }>;

const START: Record<Engine, Starter> = {
  async redis() {
    const { GenericContainer, Wait } = await import('testcontainers');
    const container = await new GenericContainer(CONTAINER_IMAGES.redis)
      .withExposedPorts(6379)
      .withWaitStrategy(Wait.forLogMessage(/Ready to accept connections/))
      .start();
    return { container, endpoint: `redis://${container.getHost()}:${container.getMappedPort(6379)}` };
  },

  /**
   * Kafka tells clients where to reconnect (advertised listener), so the port it listens on
   * inside must be the one the host sees: a free host port is picked first and bound 1:1.
   */
  async kafka() {
    const { GenericContainer, Wait } = await import('testcontainers');
    const port = await freePort();
    const container = await new GenericContainer(CONTAINER_IMAGES.kafka)
      .withExposedPorts({ container: port, host: port })
      .withEnvironment({
        KAFKA_NODE_ID: '1',
        KAFKA_PROCESS_ROLES: 'broker,controller',
        KAFKA_LISTENERS: `PLAINTEXT://0.0.0.0:${port},CONTROLLER://127.0.0.1:9093`,
        KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://127.0.0.1:${port}`,
        KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
        KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
        KAFKA_CONTROLLER_QUORUM_VOTERS: '1@127.0.0.1:9093',
        // One broker: internal topics cannot be replicated, and transactions need them.
        KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
        KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
        KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
        KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
      })
      .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
      .start();
    return { container, endpoint: `127.0.0.1:${port}` };
  },

  async elasticsearch() {
    const { GenericContainer, Wait } = await import('testcontainers');
    const container = await new GenericContainer(CONTAINER_IMAGES.elasticsearch)
      .withExposedPorts(9200)
      .withEnvironment({
        'discovery.type': 'single-node',
        'xpack.security.enabled': 'false',
        ES_JAVA_OPTS: '-Xms512m -Xmx512m',
      })
      .withWaitStrategy(Wait.forHttp('/_cluster/health?wait_for_status=yellow', 9200).forStatusCode(200))
      .withStartupTimeout(180_000)
      .start();
    return { container, endpoint: `http://${container.getHost()}:${container.getMappedPort(9200)}` };
  },
};

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no free port'))));
    });
  });
}
