/**
 * `pnpm bench:restart [--events 1000000] [--subjects 10000] [--tail 10000]`: how long
 * write-admission takes to start over a log of N events (the target is ≤ 10 s for 1,000,000, docs/pipeline.md),
 * beside the raw read of the same log in the same run. The log is generated with the real
 * decider (MemoryWritten events, records spread over `subjects` subjects) into an embedded bus
 * file. Two starts are measured, both write-admission's own:
 *   - cold: no snapshot yet (a first start, or a lost store): the whole log is folded, and the
 *     states are stored as it goes;
 *   - restart: after `tail` more events were appended past the stored checkpoint (what a
 *     kill -9 leaves: up to one snapshot interval of events), from the snapshots.
 * Numbers, not test thresholds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createSqliteBus, memoryTopicSpecs, type Bus, type OutgoingMessage } from '@gm/bus';
import { TOPICS, subjectKey, type MemoryEvent } from '@gm/contracts';
import { DEFAULT_TTL_POLICY, decide, initialState } from '@gm/domain';
import { createLogger, createMetrics } from '@gm/observability';
import { StateStore, createSqliteKeyValueStore } from '@gm/state-store';
import { writeMemoryCommand } from '@gm/testing';
import { WriteAdmission } from '@gm/write-admission';
import { progress } from './stats.ts';

const { values } = parseArgs({
  options: { events: { type: 'string', default: '1000000' }, subjects: { type: 'string', default: '10000' }, tail: { type: 'string', default: '10000' } },
});
const total = Number(values.events);
const subjects = Number(values.subjects);
const tail = Number(values.tail);
if (![total, subjects].every((n) => Number.isInteger(n) && n >= 1) || !Number.isInteger(tail) || tail < 0) {
  throw new Error('--events and --subjects are positive integers, --tail a whole number');
}

const PARTITIONS = 4;
/** The runtimes' default (MEMORY_ADMISSION_MEMORY_ENTRIES). */
const MAX_ENTRIES = 500_000;
const dir = mkdtempSync(path.join(os.tmpdir(), 'gm-restart-'));
const file = path.join(dir, 'bus.db');
const decideCtx = { ttl: DEFAULT_TTL_POLICY, idempotencyWindowMs: 24 * 3_600_000 };
const now = new Date('2026-12-01T08:00:00.000Z').toISOString();
const gc = (globalThis as { gc?: () => void }).gc ?? (() => undefined);

/** Appends `count` MemoryWritten events of new records, numbered from `from`. */
async function generate(bus: Bus, from: number, count: number): Promise<void> {
  let batch: OutgoingMessage[] = [];
  for (let i = from; i < from + count; i += 1) {
    const subjectId = `subj-${i % subjects}`;
    const key = subjectKey('bench', subjectId);
    const command = writeMemoryCommand({ commandId: `cmd-${i}`, tenantId: 'bench', subjectId, now }, { id: `rec-${i}`, content: `note ${i} about subject ${subjectId}` });
    // A fresh state per record: the generator should not pay the fold it measures.
    const { events } = decide(command, initialState(), decideCtx);
    batch.push(...events.map((value: MemoryEvent) => ({ topic: TOPICS.events, key, value })));
    if (batch.length >= 10_000) {
      await bus.produce(batch);
      batch = [];
      if ((i + 1) % 100_000 === 0) progress(`restart: generated ${i + 1} events`);
    }
  }
  if (batch.length > 0) await bus.produce(batch);
}

/** One start of write-admission over the log and the snapshot store: its time, what it folded, the heap it holds. */
async function start(): Promise<{ ms: number; folded: number; heapMb: number; held: number }> {
  const bus = createSqliteBus({ file, defaultPartitions: PARTITIONS });
  const kv = createSqliteKeyValueStore({ file: path.join(dir, 'state.db') });
  try {
    gc();
    const heapBefore = process.memoryUsage().heapUsed;
    const t = performance.now();
    const admission = new WriteAdmission({
      bus, log: createLogger({ name: 'bench', level: 'silent' }), metrics: createMetrics(), decide: decideCtx,
      snapshots: { store: new StateStore(kv, 'gm:').admission, intervalMs: 5_000, maxEntries: MAX_ENTRIES },
    });
    const folded = await admission.rebuild();
    const ms = performance.now() - t;
    gc();
    const heapMb = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
    const held = admission.heldEntries;
    // What a clean stop stores, or the next intervals do by themselves; outside the measured start.
    await admission.flush({ all: true });
    return { ms, folded, heapMb, held };
  } finally {
    await bus.close();
    await kv.close();
  }
}

try {
  const bus = createSqliteBus({ file, defaultPartitions: PARTITIONS });
  await bus.ensureTopics(memoryTopicSpecs(PARTITIONS));
  const started = performance.now();
  await generate(bus, 0, total);
  progress(`restart: ${total} events over ${subjects} subjects generated in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  await bus.close();

  // Raw: the same log read back and JSON-parsed, nothing else — the floor of any rebuild.
  const raw = createSqliteBus({ file, defaultPartitions: PARTITIONS });
  let t = performance.now();
  let rawCount = 0;
  for await (const _message of raw.readAll(TOPICS.events)) rawCount += 1;
  const rawMs = performance.now() - t;
  await raw.close();

  const cold = await start();
  progress(`restart: cold start folded ${cold.folded} events in ${(cold.ms / 1000).toFixed(2)} s`);
  const appender = createSqliteBus({ file, defaultPartitions: PARTITIONS });
  await generate(appender, total, tail);
  await appender.close();
  const warm = await start();

  const line = (what: string, r: typeof cold) =>
    `  ${what.padEnd(56)}${(r.ms / 1000).toFixed(2)} s  (${r.folded} events folded; ${(r.ms / rawMs).toFixed(2)}× raw; heap ${r.heapMb.toFixed(0)} MB, ${r.held} records, slots and deferred events held at the end of the start)`;
  process.stdout.write(
    [
      `write-admission restart — node ${process.version}, ${os.cpus().length} cpus — ${total} events, ${subjects} subjects, ${PARTITIONS} partitions, memory bound ${MAX_ENTRIES} records and slots`,
      `  ${'raw read of memory.events (SQLite rows + JSON.parse)'.padEnd(56)}${(rawMs / 1000).toFixed(2)} s  (${rawCount} messages)`,
      line('cold start (no snapshot: the whole log)', cold),
      line(`restart from the snapshots (+${tail} events past them)`, warm),
      '',
    ].join('\n'),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
