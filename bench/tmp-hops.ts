import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startStack } from '@gm/distributed';
import { createKafkaBus } from '@gm/bus';
import { TOPICS } from '@gm/contracts';
import { measureDeletion } from './deletion.ts';
import { issueToken } from './administration.ts';
import { sweepNamespace } from './cleanup.ts';

const namespace = `hops-${Date.now()}`;
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-hops-'));
const stack = await startStack({ dataDir, port: 0, namespace, env: { MEMORY_RATE_LIMIT_PER_MINUTE: '1000000' }, onLine: () => undefined });
const issuerCredential = readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim();
const target = { url: stack.url, issuerCredential };
try {
  await issueToken(target, 'tenant-hops', ['write']);
  const r = await measureDeletion(target, 'tenant-hops', Number(process.env.N ?? 20), 'hops');
  console.log('receipt p50', r.receipt.p50, 'accepted p50', r.accepted.p50);
  const bus = createKafkaBus({ brokers: [process.env.KAFKA_BROKERS ?? ''], clientId: 'hops', topicPrefix: `${namespace}.` });
  const jobs = new Map<string, Array<[string, number]>>();
  const add = (job: string, what: string, ts: number) => { const l = jobs.get(job) ?? []; l.push([what, ts]); jobs.set(job, l); };
  for await (const m of bus.readAll(TOPICS.deletionTasks)) { const v = m.value as { jobId: string; target: string }; add(v.jobId, `task:${v.target}`, m.timestamp); }
  for await (const m of bus.readAll(TOPICS.deletionAcks)) { const v = m.value as { jobId: string; target: string }; add(v.jobId, `ack:${v.target}`, m.timestamp); }
  for await (const m of bus.readAll(TOPICS.deletionReceipts)) { add(m.key, 'receipt', m.timestamp); }
  const rel = new Map<string, number[]>();
  for (const [, list] of jobs) {
    const t0 = Math.min(...list.map(([, t]) => t));
    const seen = new Set<string>();
    for (const [what, t] of list.sort((a, b) => a[1] - b[1])) {
      const key = seen.has(what) ? `${what}#2` : what; seen.add(what);
      const l = rel.get(key) ?? []; l.push(t - t0); rel.set(key, l);
    }
  }
  const med = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
  for (const [k, v] of [...rel].sort((a, b) => med(a[1]) - med(b[1]))) console.log(k.padEnd(28), 'p50', med(v), 'n', v.length);
  await bus.close();
} finally {
  await stack.stop();
  console.log(await sweepNamespace({ kafkaBrokers: process.env.KAFKA_BROKERS ?? '', redisUrl: process.env.REDIS_URL ?? '', elasticsearchUrl: process.env.ELASTICSEARCH_URL ?? '' } as never, namespace));
}
