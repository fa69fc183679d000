import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MemoryCommand, MemoryEvent, TOPICS } from '@gm/contracts';
import { ContentCodec, createSqliteKeyStore, masterKeys, openContentCrypto } from '@gm/crypto';
import { sampleEvent } from './corpus.ts';
import { progress, summarize, type Summary } from './stats.ts';

export interface CryptoOp {
  name: string;
  /** Per call, in microseconds. */
  us: Summary;
}

export interface CryptoOpsResult {
  /** UTF-8 bytes of the content sealed and opened (the bench corpus, as the runtime writes carry). */
  contentBytes: number;
  keyStore: string;
  ops: CryptoOp[];
}

type Message = Parameters<ContentCodec['seal']>[0];
type MemoryWritten = Extract<MemoryEvent, { type: 'MemoryWritten' }>;

/** Times `fn` once per input; the first `warmup` calls are not kept (JIT, SQLite page cache). */
async function timeOp<T>(name: string, inputs: readonly T[], warmup: number, fn: (input: T) => Promise<unknown>): Promise<CryptoOp> {
  const us: number[] = [];
  for (const [i, input] of inputs.entries()) {
    const started = performance.now();
    await fn(input);
    if (i >= warmup) us.push((performance.now() - started) * 1000);
  }
  const op = { name, us: summarize(us) };
  progress(`crypto: ${name}: p50 ${op.us.p50.toFixed(1)} µs over ${us.length} calls`);
  return op;
}

/**
 * ContentCodec.seal and .open alone, with no runtime around them: the per-message work the
 * sealed views of the log add (content-crypto.ts). The key store is a file of its own (WAL,
 * synchronous=FULL), so creating a key includes an fsync: the first write of a record creates its
 * data key, the first of a subject also its KEK. (The embedded runtime keeps its keys inside
 * bus.db with synchronous=NORMAL, where the bus's commit pays that fsync: the A/B above measures that.)
 */
export async function measureCryptoOps(warmCalls: number): Promise<CryptoOpsResult> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gm-bench-crypto-'));
  const store = createSqliteKeyStore({ file: path.join(dir, 'keys.db') });
  const keys = masterKeys('bench', new Map([['bench', randomBytes(32)]]));
  const warm = await openContentCrypto({ masterKeys: keys, store });
  // ttlMs 0: nothing stays cached, so every open reads and unwraps the data key and its KEK.
  const cold = await openContentCrypto({ masterKeys: keys, store, ttlMs: 0 });
  try {
    const codec = new ContentCodec({ mode: 'open', keyring: warm.keyring });
    const coldCodec = new ContentCodec({ mode: 'open', keyring: cold.keyring });
    const base = sampleEvent(0, 1, new Date());
    if (base.type !== 'MemoryWritten') throw new Error('the sample event is not a MemoryWritten');
    const content = base.data.record.content;
    const event = (subjectId: string, recordId: string): Message => {
      const value: MemoryWritten = {
        ...base, data: { record: { ...base.data.record, id: recordId, subjectId } }, metadata: { ...base.metadata, subjectId },
      };
      return { topic: TOPICS.events, key: subjectId, value };
    };
    const { record } = base.data;
    const { commandId, tenantId, actor, now, policyRevision } = base.metadata;
    const command: Message = {
      topic: TOPICS.commands, key: record.subjectId,
      value: MemoryCommand.parse({
        type: 'WriteMemory',
        data: {
          id: record.id, expectedVersion: 0, owner: record.owner, resource: record.resource, visibility: record.visibility,
          sensitivity: record.sensitivity, purposes: record.purposes, kind: record.kind, content, contentHash: record.contentHash,
          provenance: record.provenance, trust: record.trust, confidence: record.confidence,
        },
        metadata: { commandId, tenantId, subjectId: record.subjectId, actor, now, policyRevision },
      }),
    };

    const creating = Math.max(10, Math.ceil(warmCalls / 10));
    const ops: CryptoOp[] = [];
    // Distinct records, so each seal finds no data key: a subject of its own, or all of one subject.
    const newRecords = (prefix: string, subjectOf: (i: number) => string) =>
      Array.from({ length: creating + 20 }, (_, i) => event(subjectOf(i), `${prefix}-r${i}`));
    ops.push(await timeOp('seal MemoryWritten, new subject (creates KEK + data key)', newRecords('new', (i) => `new-s${i}`), 20, (m) => codec.seal(m)));
    ops.push(await timeOp('seal MemoryWritten, new record (creates its data key)', newRecords('known', () => 'known'), 20, (m) => codec.seal(m)));
    const same = <T>(x: T) => Array<T>(warmCalls + 500).fill(x);
    ops.push(await timeOp('seal MemoryWritten, data key cached', same(event('known', 'known-r0')), 500, (m) => codec.seal(m)));
    const sealed = await codec.seal(event('known', 'known-r0'));
    const opened = MemoryEvent.parse(await codec.open(TOPICS.events, sealed.value));
    if (opened.type !== 'MemoryWritten' || opened.data.record.content !== content) throw new Error('the opened content is not what was sealed');
    ops.push(await timeOp('open MemoryWritten, data key cached', same(sealed.value), 500, (v) => codec.open(TOPICS.events, v)));
    ops.push(await timeOp('open MemoryWritten, cold (2 key reads + 2 unwraps)', same(sealed.value).slice(0, creating + 20), 20,
      (v) => coldCodec.open(TOPICS.events, v)));
    ops.push(await timeOp('seal WriteMemory (transit key)', same(command), 500, (m) => codec.seal(m)));
    const sealedCommand = await codec.seal(command);
    ops.push(await timeOp('open WriteMemory (transit key)', same(sealedCommand.value), 500, (v) => codec.open(TOPICS.commands, v)));
    return { contentBytes: Buffer.byteLength(content), keyStore: 'a SQLite file of its own (WAL, synchronous=FULL: one fsync per created key)', ops };
  } finally {
    warm.close();
    cold.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
