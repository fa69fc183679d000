/**
 * `pnpm bench:stages [--writes 400] [--concurrency 8]`: where a distributed write's time goes.
 * Starts the nine services, sends writes with known ids, then reads the log back and splits
 * each write's latency at the append times Kafka recorded (producer CreateTime, one clock: all
 * processes run on this machine):
 *   api        request sent → WriteMemory appended to memory.commands (HTTP, auth, PDP, seal, produce)
 *   admission  command appended → its MemoryWritten appended (fetch, decide, data key, seal)
 *   projector  event appended → the record appended to memory.records (write-admission's commit
 *              and visibility wait, the projector's fetch, Redis, its transaction)
 *   answer     record appended → 201 (index-builder, the groups' commits seen, the reply)
 * Numbers only, p50/p95 per stage; the largest stage is named the bottleneck.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { createKafkaBus } from '@gm/bus';
import { TOPICS } from '@gm/contracts';
import { startStack } from '@gm/distributed';
import { sweepNamespace } from './cleanup.ts';
import { resolveEngines } from './engines.ts';
import { issueToken } from './administration.ts';
import { writeBody } from './http-probe.ts';
import { lanes, progress, summarize } from './stats.ts';

const { values } = parseArgs({ options: { writes: { type: 'string', default: '400' }, concurrency: { type: 'string', default: '8' } } });
const writes = Number(values.writes);
const concurrency = Number(values.concurrency);
const engines = await resolveEngines();
const namespace = `stages-${randomBytes(3).toString('hex')}`;
const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-stages-'));
const stack = await startStack({ dataDir, port: 0, namespace, env: { MEMORY_RATE_LIMIT_PER_MINUTE: '1000000' } });
try {
  const target = { url: stack.url, issuerCredential: readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim() };
  const token = await issueToken(target, 'stages');
  const sent = new Map<string, { at: number; acked: number }>();
  // Warm-up: the first write pays one-time costs (keys, first fetches).
  for (let i = 0; i < 5; i += 1) {
    await fetch(`${target.url}/v1/memories`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(writeBody(`warm ${i}`, 'warm', `warm-${i}`)) });
  }
  await lanes(writes, concurrency, async (i) => {
    const id = `st-${i}`;
    const at = Date.now();
    const res = await fetch(`${target.url}/v1/memories`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(writeBody(`stage probe ${i} harbor`, `subj-${i % 50}`, id)),
    });
    await res.arrayBuffer();
    if (res.status === 201) sent.set(id, { at, acked: Date.now() });
  });
  progress(`stages: ${sent.size} writes acknowledged; reading the log back`);
  const bus = createKafkaBus({ brokers: engines.kafkaBrokers.split(','), clientId: `stages-${process.pid}`, topicPrefix: `${namespace}.` });
  const appended = async (topic: string, idOf: (value: unknown) => string | undefined) => {
    const at = new Map<string, number>();
    for await (const m of bus.readAll(topic)) {
      const id = idOf(m.value);
      if (id !== undefined && !at.has(id)) at.set(id, m.timestamp);
    }
    return at;
  };
  type Loose = { type?: string; data?: { id?: string; record?: { id?: string } }; id?: string };
  const commands = await appended(TOPICS.commands, (v) => ((v as Loose).type === 'WriteMemory' ? (v as Loose).data?.id : undefined));
  const events = await appended(TOPICS.events, (v) => ((v as Loose).type === 'MemoryWritten' ? (v as Loose).data?.record?.id : undefined));
  const records = await appended(TOPICS.records, (v) => (v as Loose).id);
  await bus.close();
  const stages: Record<string, number[]> = { api: [], admission: [], projector: [], answer: [], total: [] };
  for (const [id, s] of sent) {
    const c = commands.get(id);
    const e = events.get(id);
    const r = records.get(id);
    if (c === undefined || e === undefined || r === undefined) continue;
    stages.api?.push(c - s.at);
    stages.admission?.push(e - c);
    stages.projector?.push(r - e);
    stages.answer?.push(s.acked - r);
    stages.total?.push(s.acked - s.at);
  }
  const rows = Object.entries(stages).map(([name, xs]) => ({ name, ...summarize(xs) }));
  const slowest = rows.filter((r) => r.name !== 'total').sort((a, b) => b.p50 - a.p50)[0];
  process.stdout.write(
    [
      `distributed write stages — ${writes} writes, ${concurrency} writers, node ${process.version} (ms, from Kafka append times)`,
      ...rows.map((r) => `  ${r.name.padEnd(10)} n ${String(r.n).padStart(5)}  p50 ${r.p50.toFixed(1).padStart(7)}  p95 ${r.p95.toFixed(1).padStart(7)}`),
      `  bottleneck: ${slowest?.name ?? '?'} (largest p50)`,
      '',
    ].join('\n'),
  );
} finally {
  await stack.stop();
  rmSync(dataDir, { recursive: true, force: true });
  progress(`stages: cleanup ${(await sweepNamespace(engines, namespace)).join('; ')}`);
}
