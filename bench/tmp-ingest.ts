import { mkdtempSync, readFileSync, writeFileSync, appendFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack } from '@gm/distributed';
import { measureIngest } from './ingest.ts';
import { sweepNamespace } from './cleanup.ts';

const namespace = `ingest-${Date.now()}`;
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-ing-'));
const logFile = '/tmp/ingest-stack.log';
writeFileSync(logFile, '');
const stack = await startStack({ dataDir, port: 0, namespace, env: { MEMORY_RATE_LIMIT_PER_MINUTE: '1000000' }, onLine: (s, l) => appendFileSync(logFile, `[${s}] ${l}\n`) });
const issuerCredential = readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim();
const target = { url: stack.url, issuerCredential };
const processes = [...stack.children].flatMap(([name, children]) => children.flatMap((c) => (c.pid === undefined ? [] : [{ name, pid: c.pid }])));
try {
  const r = await measureIngest(target, 'tenant-ingest', Number(process.env.SECONDS ?? 60), 'ingest', { brokers: [process.env.KAFKA_BROKERS ?? ''], namespace, processes });
  console.log(JSON.stringify(r.kafka?.cpu));
} finally {
  for (const [name, children] of stack.children) for (const c of children) console.log(name, c.pid, 'exit', c.exitCode, c.signalCode);
  await stack.stop();
  console.log(await sweepNamespace({ kafkaBrokers: process.env.KAFKA_BROKERS ?? '', redisUrl: process.env.REDIS_URL ?? '', elasticsearchUrl: process.env.ELASTICSEARCH_URL ?? '' } as never, namespace));
}
