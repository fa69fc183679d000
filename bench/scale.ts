/**
 * `pnpm bench --scale` (docs/ingest.md): the distributed stack with 1, 2 and 4 instances of each
 * pipeline service (write-admission, projector, index-builder, and the ingest-gateway that the
 * load enters by) on 12 partitions, each under the same memory.ingest load. Per configuration:
 * admitted writes/s, write→searchable p95, the largest consumer lag each group reached, and CPU
 * per process (which one is CPU-bound). The raw engines are measured first, in the same run.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createKafkaBus, groupLag } from '@gm/bus';
import { CONSUMER_GROUPS, TOPICS } from '@gm/contracts';
import { startStack, type ServiceName } from '@gm/distributed';
import { sweepNamespace } from './cleanup.ts';
import { localEngineProcesses, sampleCpu, type ProcessCpu } from './cpu.ts';
import type { Engines } from './engines.ts';
import { issueToken } from './administration.ts';
import { measureKafkaIngest, type KafkaIngestResult } from './kafka-ingest.ts';
import type { BenchOptions } from './options.ts';
import { measureRawKafka, type RawKafkaResult } from './raw-kafka.ts';
import { measureRawSearch } from './raw-search.ts';
import { progress } from './stats.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const PIPELINE: ServiceName[] = ['ingest-gateway', 'write-admission', 'projector', 'index-builder'];
const PARTITIONS = 12;
/** The groups the load passes through, with the topic each consumes. */
const GROUPS: Array<[group: string, topic: string]> = [
  [CONSUMER_GROUPS.ingestGateway, TOPICS.ingest], [CONSUMER_GROUPS.writeAdmission, TOPICS.commands], [CONSUMER_GROUPS.projector, TOPICS.events],
  [CONSUMER_GROUPS.indexBuilder, TOPICS.events], [CONSUMER_GROUPS.summaryBuilder, TOPICS.events],
];

export interface ScaleStep {
  instances: number;
  ingest: KafkaIngestResult;
  /** The largest total lag (all partitions) each group reached during the load, sampled each second. */
  maxLag: Record<string, number>;
  /** Per group, the largest lag of the load's first half and of its second: a lag that keeps up stops growing. */
  lagByHalf: Record<string, [first: number, second: number]>;
  cpu: ProcessCpu[];
}

export interface ScaleResult {
  at: string;
  host: { cpus: number; memoryGb: number };
  partitions: number;
  seconds: number;
  raw: { kafka: RawKafkaResult; esBulkPerSecond: number };
  steps: ScaleStep[];
}

/** Samples each group's total lag every second until stopped; answers the maximum per group, overall and per half of the samples. */
function sampleLag(brokers: string, namespace: string): { stop(): Promise<Pick<ScaleStep, 'maxLag' | 'lagByHalf'>> } {
  const bus = createKafkaBus({ brokers: brokers.split(','), clientId: `${namespace}-lag`, topicPrefix: `${namespace}.` });
  const samples: Record<string, number[]> = Object.fromEntries(GROUPS.map(([g]) => [g, []]));
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const [group, topic] of GROUPS) {
        const lag = (await groupLag(bus, group, topic).catch(() => [])).reduce((a, b) => a + b, 0);
        samples[group]?.push(lag);
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  })();
  const peak = (xs: number[]) => xs.reduce((a, b) => Math.max(a, b), 0);
  return {
    stop: async () => {
      running = false;
      await loop;
      await bus.close();
      const entries = Object.entries(samples);
      return {
        maxLag: Object.fromEntries(entries.map(([g, xs]) => [g, peak(xs)])),
        lagByHalf: Object.fromEntries(entries.map(([g, xs]) => [g, [peak(xs.slice(0, Math.ceil(xs.length / 2))), peak(xs.slice(Math.ceil(xs.length / 2)))]])),
      };
    },
  };
}

async function step(instances: number, options: BenchOptions, namespace: string, engines: Engines): Promise<ScaleStep> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-bench-scale-'));
  const ns = `${namespace}-x${instances}`;
  try {
    const started = performance.now();
    const stack = await startStack({
      dataDir, port: 0, namespace: ns, env: { MEMORY_RATE_LIMIT_PER_MINUTE: '1000000', MEMORY_PARTITIONS: String(PARTITIONS) },
      instances: Object.fromEntries(PIPELINE.map((s) => [s, instances])),
    });
    progress(`scale ×${instances}: ${[...stack.children.values()].flat().length} processes started in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    try {
      const issuerCredential = readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim();
      const http = { url: stack.url, issuerCredential };
      const token = await issueToken(http, 'bench-scale', ['write', 'search', 'read']);
      const processes = [
        ...[...stack.children.entries()].flatMap(([name, children]) => children.map((c, i) => ({ name: `${name}#${i + 1}`, pid: c.pid ?? 0 }))),
        ...localEngineProcesses(ROOT),
      ];
      const lag = sampleLag(engines.kafkaBrokers, ns);
      const cpu = sampleCpu(processes);
      const ingest = await measureKafkaIngest({ http, brokers: engines.kafkaBrokers.split(','), namespace: ns, token }, options.ingestSeconds, `scale ×${instances}`);
      const cpuUse = cpu.stop();
      const { maxLag, lagByHalf } = await lag.stop();
      progress(`scale ×${instances}: busiest ${cpuUse.slice(0, 4).map((p) => `${p.name} ${p.cpuPercent.toFixed(0)}%`).join(', ')}`);
      return { instances, ingest, maxLag, lagByHalf, cpu: cpuUse };
    } finally {
      await stack.stop();
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
    progress(`scale ×${instances}: cleanup ${(await sweepNamespace(engines, ns)).join('; ')}`);
  }
}

export async function measureScale(options: BenchOptions, namespace: string, engines: Engines): Promise<ScaleResult> {
  const kafka = await measureRawKafka(engines.kafkaBrokers.split(','), `${namespace}.`, options.rawRoundTrips, options.kafkaRecords);
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'gm-bench-raw-'));
  let esBulkPerSecond = Number.NaN;
  try {
    const search = await measureRawSearch(engines.elasticsearchUrl, `gm-${namespace}-raw-search`, path.join(scratch, 'fts.db'), [options.datasetSizes[0] ?? 10_000], options.tenants, 20);
    esBulkPerSecond = search.elasticsearch[0]?.loadPerSecond ?? Number.NaN;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
    await sweepNamespace(engines, namespace);
  }
  const steps: ScaleStep[] = [];
  for (const instances of options.scaleInstances) {
    // 4 of each pipeline service plus the rest: about 20 Node processes; skipped when memory is short.
    if (instances === 4 && os.freemem() < 6 * 2 ** 30) {
      progress('scale ×4 skipped: less than 6 GiB of memory free');
      continue;
    }
    steps.push(await step(instances, options, namespace, engines));
  }
  return {
    at: new Date().toISOString(), host: { cpus: os.cpus().length, memoryGb: Math.round(os.totalmem() / 2 ** 30) },
    partitions: PARTITIONS, seconds: options.ingestSeconds, raw: { kafka, esBulkPerSecond }, steps,
  };
}

const num = (x: number, digits = 0) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');

/** The table, and the bottleneck of each configuration named from its figures. */
export function formatScale(r: ScaleResult): string {
  const lines = [
    `scale-out: memory.ingest load (4 kafkajs producers × 500, ${r.seconds} s), ${r.partitions} partitions, ${r.host.cpus} cores`,
    `raw, same run: kafkajs produce ${num(r.raw.kafka.produceThroughput)} records/s, consume ${num(r.raw.kafka.consumeThroughput)} records/s; ES _bulk ${num(r.raw.esBulkPerSecond)} docs/s`,
    '',
    `${'instances'.padEnd(10)}${'admitted/s'.padStart(11)}${'÷ produce'.padStart(11)}${'searchable p95'.padStart(16)}   max lag: ${GROUPS.map(([g]) => g).join(' / ')}`,
  ];
  for (const s of r.steps) {
    lines.push(`${String(s.instances).padEnd(10)}${num(s.ingest.admittedPerSecond).padStart(11)}${`${(s.ingest.admittedPerSecond / r.raw.kafka.produceThroughput).toPrecision(2)}×`.padStart(11)}`
      + `${`${num(s.ingest.visible.p95)} ms`.padStart(16)}   ${GROUPS.map(([g]) => num(s.maxLag[g] ?? Number.NaN)).join(' / ')}`);
  }
  lines.push('', 'lag trend, peak of the load\'s first half → its second half (a group that keeps up stops growing):');
  for (const s of r.steps) {
    lines.push(`  ×${s.instances}: ${GROUPS.map(([g]) => {
      const [first, second] = s.lagByHalf?.[g] ?? [Number.NaN, Number.NaN];
      // Growing: the second half's peak is past the first's by a fifth and by more than a second of the load's admitted writes.
      const growing = second > first * 1.2 && second - first > s.ingest.admittedPerSecond;
      return `${g} ${num(first)} → ${num(second)}${growing ? ' (growing)' : ''}`;
    }).join(', ')}`);
  }
  lines.push('', 'CPU per process during the load (% of one core), busiest first:');
  for (const s of r.steps) {
    const total = s.cpu.reduce((a, p) => a + (Number.isFinite(p.cpuPercent) ? p.cpuPercent : 0), 0);
    const byService = new Map<string, number>();
    for (const p of s.cpu) {
      const service = p.name.replace(/#\d+$/, '');
      byService.set(service, (byService.get(service) ?? 0) + (p.cpuPercent || 0));
    }
    const [busiest] = [...byService].sort((a, b) => b[1] - a[1]);
    const saturated = total >= 0.85 * r.host.cpus * 100;
    lines.push(`  ×${s.instances}: ${s.cpu.slice(0, 8).map((p) => `${p.name} ${num(p.cpuPercent)}`).join(', ')}`);
    lines.push(`      all processes ${num(total)}% of ${r.host.cpus * 100}%; busiest service ${busiest?.[0] ?? 'n/a'} ${num(busiest?.[1] ?? Number.NaN)}%`
      + ` — ${saturated ? 'the machine is CPU-bound: more instances share the same cores' : 'CPU is not saturated: the limit is waiting (round trips, transactions), not computing'}`);
  }
  return `${lines.join('\n')}\n`;
}

export function writeScale(r: ScaleResult): string {
  const dir = path.join(ROOT, 'bench-results');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `scale-${r.at.replaceAll(':', '-')}.json`);
  writeFileSync(file, `${JSON.stringify(r, null, 2)}\n`);
  return file;
}
