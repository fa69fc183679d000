/**
 * Real embedded stores for service-level integration specs: a bus, a key-value state store
 * and a search index, each a SQLite file in a fresh temp folder, plus a clock the test moves
 * by hand. Nothing here is faked; `close()` releases the files and removes the folder.
 * Loggers and metrics belong to @gm/observability, which this package does not depend on:
 * specs make their own and may pass a `LogSink` as the pino destination.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { createSqliteBus, memoryTopicSpecs, type Bus, type ConsumedMessage } from '@gm/bus';
import {
  MemoryCommand,
  type Actor, type Clock, type MessageMetadata, type WriteMemoryData,
} from '@gm/contracts';
import { createSqliteSearchIndex, type SearchIndex } from '@gm/search-index';
import { StateStore, createSqliteKeyValueStore, type KeyValueStore } from '@gm/state-store';

export { eventually } from './eventually.ts';

/** A clock the test moves by hand; services read every "now" from it. */
export class TestClock implements Clock {
  constructor(public ms = Date.parse('2026-11-30T08:00:00.000Z')) {}
  now = (): Date => new Date(this.ms);
  iso = (): string => new Date(this.ms).toISOString();
  advance(ms: number): void {
    this.ms += ms;
  }
}

/** The topics of design §4, co-partitioned (the embedded runtime declares the same set). */

/** Collects JSON log lines written to it (a pino destination) so specs can read them. */
export class LogSink extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    done();
  }
  /** Parsed lines; pino writes one JSON object per line. */
  records(): Array<Record<string, unknown>> {
    return this.lines.map((line) => JSON.parse(line) as Record<string, unknown>);
  }
}

export interface EmbeddedFixture {
  readonly dir: string;
  readonly clock: TestClock;
  /** Replaced by `reopen()`: read these through the fixture, do not keep them. */
  readonly bus: Bus;
  readonly kv: KeyValueStore;
  readonly state: StateStore;
  readonly index: SearchIndex;
  /** Retry, dead-letter and consumer-failure warnings of the bus, in order. */
  readonly busWarnings: Array<{ msg: string; detail: object }>;
  /** Every message of a topic, partition by partition, in offset order. */
  readTopic(topic: string): Promise<ConsumedMessage[]>;
  /** Closes every store and opens it again on the same files: a process restart. */
  reopen(): Promise<void>;
  /** Closes every store and deletes the folder. Idempotent. */
  close(): Promise<void>;
}

/**
 * `policyLoaded` (default true): the state store opens marked as holding the policy projection,
 * as the embedded runtime's does (state and log in one directory, design §6.2); false leaves
 * setting it to the policy projector, as on a distributed deployment.
 */
export async function openEmbeddedFixture(options: { partitions?: number; clock?: TestClock; policyLoaded?: boolean } = {}): Promise<EmbeddedFixture> {
  const partitions = options.partitions ?? 3;
  const clock = options.clock ?? new TestClock();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gm-int-'));
  const busWarnings: EmbeddedFixture['busWarnings'] = [];

  const open = async () => {
    const bus = createSqliteBus({
      file: path.join(dir, 'bus.db'),
      defaultPartitions: partitions,
      logger: { warn: (detail, msg) => busWarnings.push({ msg, detail }) },
    });
    await bus.ensureTopics(memoryTopicSpecs(partitions));
    const kv = createSqliteKeyValueStore({ file: path.join(dir, 'state.db'), now: () => clock.now().getTime() });
    const index = createSqliteSearchIndex({ file: path.join(dir, 'index.db') });
    const state = new StateStore(kv, 'gm:', () => clock.now().getTime());
    if (options.policyLoaded !== false) await state.policyProjection.mark();
    return { bus, kv, index, state };
  };
  let stores = await open();
  let closed = false;
  const closeStores = async () => {
    await stores.bus.close();
    await stores.index.close();
    await stores.kv.close();
  };

  return {
    dir,
    clock,
    busWarnings,
    get bus() {
      return stores.bus;
    },
    get kv() {
      return stores.kv;
    },
    get state() {
      return stores.state;
    },
    get index() {
      return stores.index;
    },
    async readTopic(topic) {
      const out: ConsumedMessage[] = [];
      for await (const message of stores.bus.readAll(topic)) out.push(message);
      return out;
    },
    async reopen() {
      await closeStores();
      stores = await open();
    },
    async close() {
      if (closed) return;
      closed = true;
      try {
        await closeStores();
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}

export const sha256Hex = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** The writer agent of the specs, acting for person-ana. */
export const TEST_WRITER: Actor = {
  agentId: 'agent-notes', principalId: 'person-ana', principalKind: 'person', runId: 'run-1', purpose: 'support',
};

/** A WriteMemory command, parsed with its zod schema so it can never drift from the contract. */
export function writeMemoryCommand(
  meta: Pick<MessageMetadata, 'commandId' | 'tenantId' | 'subjectId' | 'now'> & Partial<MessageMetadata>,
  data: Partial<WriteMemoryData> & Pick<WriteMemoryData, 'id' | 'content'>,
): MemoryCommand {
  return MemoryCommand.parse({
    type: 'WriteMemory',
    data: {
      expectedVersion: 0,
      owner: { principalId: TEST_WRITER.principalId, kind: 'person' },
      resource: { kind: 'project', id: 'maple' },
      visibility: 'team',
      sensitivity: 'normal',
      purposes: ['support'],
      kind: 'fact',
      contentHash: sha256Hex(data.content),
      provenance: [{ source: 'user', observedAt: meta.now }],
      trust: 'trusted',
      confidence: 0.8,
      ...data,
    },
    metadata: { actor: TEST_WRITER, policyRevision: 1, ...meta },
  });
}
