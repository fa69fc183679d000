/**
 * The durable log behind the embedded bus: one SQLite file in WAL mode. Everything here is
 * synchronous (better-sqlite3); the bus adds the async surface, notifications and consumer loops.
 *
 * Durability has two levels, one per kind of write:
 * - `append` (a produce: what the API acknowledges) commits with synchronous=FULL, so a produce
 *   that returned has reached the disk. The bus coalesces concurrent produces into one append,
 *   so they share that one fsync.
 * - `commit` and `deadLetter` (a consumer's offset with its sends) commit with
 *   synchronous=NORMAL: they survive a process crash (kill -9), and an OS crash or power loss
 *   can drop only a suffix of them — WAL frames carry a cumulative checksum, so recovery keeps
 *   a prefix of the log, never a later commit without an earlier one. What such a loss drops is
 *   derived: every consumer's results are a function of the messages before its offset, so
 *   after the restart the consumer derives them again from the durable input, as after a
 *   kill -9 before its commit. The next FULL append makes everything before it durable too.
 *
 * Writes run in IMMEDIATE transactions: they take the write lock up front, so two processes
 * appending to the same file serialize instead of failing on a lock upgrade, and offsets
 * stay dense (the next offset is read inside the same transaction that writes it). Writers in
 * other threads of this process queue on the file's lock in shared memory first
 * (@gm/thread-lock), so they never meet in SQLite's sleeping busy handler.
 */
import { encodeMessage } from '../messages.ts';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import { GovernedMemoryError } from '@gm/contracts';
import { openSqlite, underLock, type ThreadLock } from '@gm/thread-lock';
import type { ConsumedMessage, LogPosition, OutgoingMessage, TopicSpec } from '../port.ts';
import { PartitionCountMismatchError } from '../partition-count.ts';
import { partitionForKey } from '../partitioner.ts';

const SCHEMA_VERSION = 1;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS topics (
  name       TEXT PRIMARY KEY,
  partitions INTEGER NOT NULL CHECK (partitions > 0),
  compacted  INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE TABLE IF NOT EXISTS messages (
  topic        TEXT NOT NULL,
  partition_no INTEGER NOT NULL,
  offset_no    INTEGER NOT NULL,
  key          TEXT NOT NULL,
  value        TEXT NOT NULL,
  headers      TEXT NOT NULL,
  timestamp    INTEGER NOT NULL,
  PRIMARY KEY (topic, partition_no, offset_no)
) STRICT;
-- Lets readAll of a compacted topic find the latest offset of a key without a scan.
CREATE INDEX IF NOT EXISTS messages_by_key ON messages (topic, partition_no, key, offset_no);
CREATE TABLE IF NOT EXISTS group_offsets (
  group_id     TEXT NOT NULL,
  topic        TEXT NOT NULL,
  partition_no INTEGER NOT NULL,
  next_offset  INTEGER NOT NULL,
  PRIMARY KEY (group_id, topic, partition_no)
) STRICT, WITHOUT ROWID;
`;

/** Consecutive messages of one partition that a group handled: offsets `from` to `next - 1`. */
export interface ConsumedRange {
  topic: string;
  partition: number;
  from: number;
  next: number;
}

/** One handler attempt's share of a commit: its sends, and what it builds from where they landed. */
export interface CommitPart {
  sends: readonly SerializedMessage[];
  build?: (sent: readonly LogPosition[]) => SerializedMessage[];
}

export interface TopicInfo {
  partitions: number;
  compacted: boolean;
}

/** A message whose value and headers are already JSON text, ready to insert. */
export interface SerializedMessage {
  topic: string;
  key: string;
  value: string;
  headers: string;
}

interface MessageRow {
  offset_no: number;
  key: string;
  value: string;
  headers: string;
  timestamp: number;
}

/**
 * Turns messages into JSON text before any transaction starts, so a value JSON cannot carry
 * (BigInt, a cycle, undefined) fails the whole call and nothing is appended.
 */
export function serializeMessages(messages: readonly OutgoingMessage[]): SerializedMessage[] {
  return messages.map(serializeMessage);
}

/** The SQLite row form: headers as JSON text. */
export function serializeMessage(m: OutgoingMessage, index = 0): SerializedMessage {
  const encoded = encodeMessage(m, index);
  return { ...encoded, headers: JSON.stringify(encoded.headers) };
}


const unknownTopic = (topic: string): GovernedMemoryError =>
  new GovernedMemoryError('MEM_VALIDATION', `unknown topic "${topic}" (create it with ensureTopics first)`);

export class SqliteLog {
  private readonly db: Database.Database;
  private readonly stmt;
  /** The connection's current synchronous level (see the file comment). */
  private synchronous: 'FULL' | 'NORMAL';
  /** Topic metadata never shrinks and changes only through ensureTopics: cached per name. */
  private readonly topics = new Map<string, TopicInfo>();
  /** Writers of this file in other threads of the process queue here, not in SQLite's busy handler. */
  private readonly writeLock: ThreadLock | undefined;

  constructor(file: string) {
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    const { db: opened, writeLock, journalMode } = openSqlite(file, { synchronous: 'FULL' });
    this.db = opened;
    this.writeLock = writeLock;
    if (file !== ':memory:' && journalMode !== 'wal') {
      this.db.close();
      throw new GovernedMemoryError('MEM_UNAVAILABLE', `bus file ${file}: SQLite refused WAL mode (journal_mode=${journalMode})`);
    }
    this.synchronous = 'FULL';
    this.db.exec(SCHEMA);
    this.db.pragma(`user_version = ${SCHEMA_VERSION}`);
    const db = this.db;
    this.stmt = {
      topic: db.prepare<[string], { partitions: number; compacted: number }>('SELECT partitions, compacted FROM topics WHERE name = ?'),
      // An existing topic keeps its partition count (checked before) and its compaction flag.
      upsertTopic: db.prepare<[string, number, number]>(
        'INSERT INTO topics (name, partitions, compacted) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING',
      ),
      lastOffset: db.prepare<[string, number], { last: number | null }>(
        'SELECT MAX(offset_no) AS last FROM messages WHERE topic = ? AND partition_no = ?',
      ),
      insert: db.prepare<[string, number, number, string, string, string, number]>(
        'INSERT INTO messages (topic, partition_no, offset_no, key, value, headers, timestamp) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      fetch: db.prepare<[string, number, number, number], MessageRow>(
        `SELECT offset_no, key, value, headers, timestamp FROM messages
         WHERE topic = ? AND partition_no = ? AND offset_no >= ? ORDER BY offset_no LIMIT ?`,
      ),
      // messages_by_key answers it: a subject's messages without reading the partition's others.
      fetchKeyed: db.prepare<[string, number, string, number, number], MessageRow>(
        `SELECT offset_no, key, value, headers, timestamp FROM messages
         WHERE topic = ? AND partition_no = ? AND key IN (SELECT value FROM json_each(?)) AND offset_no >= ?
         ORDER BY offset_no LIMIT ?`,
      ),
      fetchKeyedLatest: db.prepare<[string, number, string, number, number], MessageRow>(
        `SELECT m.offset_no, m.key, m.value, m.headers, m.timestamp FROM messages m
         WHERE m.topic = ? AND m.partition_no = ? AND m.key IN (SELECT value FROM json_each(?)) AND m.offset_no >= ?
           AND NOT EXISTS (SELECT 1 FROM messages n WHERE n.topic = m.topic AND n.partition_no = m.partition_no
                                                      AND n.key = m.key AND n.offset_no > m.offset_no)
         ORDER BY m.offset_no LIMIT ?`,
      ),
      fetchLatest: db.prepare<[string, number, number, number], MessageRow>(
        `SELECT m.offset_no, m.key, m.value, m.headers, m.timestamp FROM messages m
         WHERE m.topic = ? AND m.partition_no = ? AND m.offset_no >= ?
           AND NOT EXISTS (SELECT 1 FROM messages n WHERE n.topic = m.topic AND n.partition_no = m.partition_no
                                                      AND n.key = m.key AND n.offset_no > m.offset_no)
         ORDER BY m.offset_no LIMIT ?`,
      ),
      committed: db.prepare<[string, string, number], { next_offset: number }>(
        'SELECT next_offset FROM group_offsets WHERE group_id = ? AND topic = ? AND partition_no = ?',
      ),
      commit: db.prepare<[string, string, number, number]>(
        `INSERT INTO group_offsets (group_id, topic, partition_no, next_offset) VALUES (?, ?, ?, ?)
         ON CONFLICT (group_id, topic, partition_no) DO UPDATE SET next_offset = excluded.next_offset`,
      ),
      commitIfMissing: db.prepare<[string, string, number, number]>(
        'INSERT OR IGNORE INTO group_offsets (group_id, topic, partition_no, next_offset) VALUES (?, ?, ?, ?)',
      ),
      deleteGroup: db.prepare<[string]>('DELETE FROM group_offsets WHERE group_id = ?'),
    };
  }

  topic(name: string): TopicInfo | undefined {
    const cached = this.topics.get(name);
    if (cached !== undefined) return cached;
    const row = this.stmt.topic.get(name);
    if (row === undefined) return undefined;
    const info = { partitions: row.partitions, compacted: row.compacted === 1 };
    this.topics.set(name, info);
    return info;
  }

  /** Forgets cached topic metadata: another process (or ensureTopics) may have grown a topic. */
  refreshTopics(): void {
    this.topics.clear();
  }

  requireTopic(name: string): TopicInfo {
    const info = this.topic(name);
    if (info === undefined) throw unknownTopic(name);
    return info;
  }

  ensureTopics(specs: readonly TopicSpec[], defaultPartitions: number): void {
    this.write(() => this.db
      .transaction(() => {
        for (const spec of specs) {
          // `partitions` is required by the type; untyped config that omits it gets the default.
          const partitions = spec.partitions ?? defaultPartitions;
          if (typeof spec.name !== 'string' || spec.name.length === 0) {
            throw new GovernedMemoryError('MEM_VALIDATION', 'topic names must be non-empty strings');
          }
          if (!Number.isInteger(partitions) || partitions < 1) {
            throw new GovernedMemoryError('MEM_VALIDATION', `topic "${spec.name}": partitions must be a positive integer`);
          }
          const names = spec.deadLetters === false ? [spec.name] : [spec.name, `${spec.name}.dlq`];
          for (const name of names) {
            const existing = this.stmt.topic.get(name)?.partitions;
            if (existing !== undefined && existing !== partitions) throw new PartitionCountMismatchError(name, existing, partitions);
          }
          this.stmt.upsertTopic.run(spec.name, partitions, spec.compacted === true ? 1 : 0);
          if (spec.deadLetters !== false) this.stmt.upsertTopic.run(`${spec.name}.dlq`, partitions, 0);
        }
      })
      .immediate());
    this.refreshTopics();
  }

  /**
   * Appends every list in one durable (FULL) transaction; returns each list's positions.
   * Throws, appending nothing, if any topic is unknown: callers check topics first
   * (`requireTopic`) so that one caller's bad topic never fails the others of a group commit.
   */
  append(lists: ReadonlyArray<readonly SerializedMessage[]>): LogPosition[][] {
    return this.write(() => {
      this.setSynchronous('FULL');
      return this.db.transaction(() => lists.map((messages) => this.appendInTransaction(messages))).immediate();
    });
  }

  endOffset(topic: string, partition: number): number {
    return (this.stmt.lastOffset.get(topic, partition)?.last ?? -1) + 1;
  }

  endOffsets(topic: string): number[] {
    const { partitions } = this.requireTopic(topic);
    return Array.from({ length: partitions }, (_, p) => this.endOffset(topic, p));
  }

  /** Messages from `fromOffset` in offset order; with `keys`, only those (ReadOptions.keys). */
  fetch(topic: string, partition: number, fromOffset: number, limit: number, latestPerKey = false, keys?: ReadonlySet<string>): ConsumedMessage[] {
    const rows = keys === undefined
      ? (latestPerKey ? this.stmt.fetchLatest : this.stmt.fetch).all(topic, partition, fromOffset, limit)
      : (latestPerKey ? this.stmt.fetchKeyedLatest : this.stmt.fetchKeyed).all(topic, partition, JSON.stringify([...keys]), fromOffset, limit);
    return rows.map((row) => ({
      topic,
      partition,
      offset: row.offset_no,
      key: row.key,
      value: JSON.parse(row.value) as unknown,
      headers: JSON.parse(row.headers) as Record<string, string>,
      timestamp: row.timestamp,
    }));
  }

  /** The group's next offset for a partition; 0 when it never committed. */
  committed(groupId: string, topic: string, partition: number): number {
    return this.stmt.committed.get(groupId, topic, partition)?.next_offset ?? 0;
  }

  committedOffsets(groupId: string, topic: string): number[] {
    const { partitions } = this.requireTopic(topic);
    return Array.from({ length: partitions }, (_, p) => this.committed(groupId, topic, p));
  }

  /** Pins groups without a committed offset to the current end (fromBeginning: false). */
  commitEndOffsetsIfMissing(groupId: string, topics: readonly string[]): void {
    this.write(() => this.db
      .transaction(() => {
        for (const topic of topics) {
          this.endOffsets(topic).forEach((end, p) => this.stmt.commitIfMissing.run(groupId, topic, p, end));
        }
      })
      .immediate());
  }

  /**
   * Commits a consumed range of one partition — the group's next offset becomes `next` — together
   * with `sends`, in one transaction (NORMAL: see the file comment). Fenced: if the group's
   * committed offset is no longer `from` (another consumer got there first, or the group was
   * reset), nothing is written and it returns undefined — so bus appends stay exactly-once
   * even when two consumers race for a partition.
   */
  commit(groupId: string, range: ConsumedRange, parts: readonly CommitPart[]): LogPosition[] | undefined {
    return this.write(() => {
      this.setSynchronous('NORMAL');
      return this.db.transaction(() => this.commitInTransaction(groupId, range, parts)).immediate();
    });
  }

  /**
   * Like `commit` of one message, but the only message appended goes to `<topic>.dlq`. The DLQ
   * topic is created on demand (same partition count) so a poison message is never dropped
   * because nobody declared its dead-letter topic (e.g. a consumer of a `.dlq` topic itself).
   */
  deadLetter(groupId: string, consumed: LogPosition, dlqMessage: SerializedMessage): LogPosition[] | undefined {
    return this.write(() => {
      this.setSynchronous('NORMAL');
      return this.db
        .transaction(() => {
          if (this.topic(dlqMessage.topic) === undefined) {
            this.stmt.upsertTopic.run(dlqMessage.topic, this.requireTopic(consumed.topic).partitions, 0);
            this.topics.delete(dlqMessage.topic);
          }
          const range = { topic: consumed.topic, partition: consumed.partition, from: consumed.offset, next: consumed.offset + 1 };
          return this.commitInTransaction(groupId, range, [{ sends: [dlqMessage] }]);
        })
        .immediate();
    });
  }

  /** Sets a group's next offset of every partition of a topic (`offsets` names them all). */
  setCommitted(groupId: string, topic: string, offsets: readonly number[]): void {
    const { partitions } = this.requireTopic(topic);
    if (offsets.length !== partitions) {
      throw new GovernedMemoryError('MEM_VALIDATION', `topic ${topic} has ${partitions} partitions, ${offsets.length} offsets given`);
    }
    this.write(() => this.db
      .transaction(() => offsets.forEach((offset, p) => this.stmt.commit.run(groupId, topic, p, offset)))
      .immediate());
  }

  resetGroup(groupId: string): void {
    this.write(() => this.stmt.deleteGroup.run(groupId));
  }

  /** Every write of this file goes through here: see `writeLock`. */
  private write<T>(work: () => T): T {
    return underLock(this.writeLock, work);
  }

  close(): void {
    this.db.close();
  }

  /** Every part's sends in order, then what each part builds from its own sends' positions. */
  private commitInTransaction(groupId: string, range: ConsumedRange, parts: readonly CommitPart[]): LogPosition[] | undefined {
    if (this.committed(groupId, range.topic, range.partition) !== range.from) return undefined;
    const sent = parts.map((part) => this.appendInTransaction(part.sends));
    const built = parts.flatMap((part, i) => (part.build === undefined ? [] : this.appendInTransaction(part.build(sent[i] ?? []))));
    this.stmt.commit.run(groupId, range.topic, range.partition, range.next);
    return [...sent.flat(), ...built];
  }

  /** A pragma outside any transaction, and only when the level changes. */
  private setSynchronous(level: 'FULL' | 'NORMAL'): void {
    if (this.synchronous === level) return;
    this.db.pragma(`synchronous = ${level}`);
    this.synchronous = level;
  }

  private appendInTransaction(messages: readonly SerializedMessage[]): LogPosition[] {
    const now = Date.now();
    const partitionsOf = new Map<string, number>();
    const nextOffsets = new Map<string, number>();
    return messages.map((m) => {
      let partitions = partitionsOf.get(m.topic);
      if (partitions === undefined) {
        partitions = this.requireTopic(m.topic).partitions;
        partitionsOf.set(m.topic, partitions);
      }
      const partition = partitionForKey(m.key, partitions);
      const slot = `${partition}\u0000${m.topic}`;
      const offset = nextOffsets.get(slot) ?? this.endOffset(m.topic, partition);
      nextOffsets.set(slot, offset + 1);
      this.stmt.insert.run(m.topic, partition, offset, m.key, m.value, m.headers, now);
      return { topic: m.topic, partition, offset };
    });
  }
}
