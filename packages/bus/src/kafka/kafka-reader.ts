/**
 * Reads one partition from an offset up to an end offset fixed by the caller, with read_committed
 * fetches straight from the partition's leader and no consumer group (the patched kafkajs admin's
 * `fetchPartition`). A read through a group had to join a throwaway group first: a JoinGroup and
 * a SyncGroup per read, and a read that waited for that group's coordinator whenever it was the
 * broker that had failed (docs/reliability.md, the broker freeze). Transaction markers and
 * aborted records are skipped; offsets of what is yielded therefore increase strictly but are not
 * dense.
 */
import type { Admin } from 'kafkajs';
import { GovernedMemoryError } from '@gm/contracts';
import type { ConsumedMessage } from '../port.ts';
import { errorMessage } from '../bus-logger.ts';
import { decodeMessage, unavailable } from './kafka-codec.ts';
import { waitingOnKafka } from './kafka-waits.ts';

export interface ReadRange {
  /** Kafka topic name and the port's name for the messages yielded. */
  kafkaTopic: string;
  topic: string;
  partition: number;
  /** First offset wanted (inclusive) and the end captured before reading (exclusive). */
  from: number;
  end: number;
}

/**
 * No progress for this long while the captured end is not reached means the partition has no
 * leader that answers: the read fails retriably and its caller reads again later. A fetch to a
 * frozen broker fails after the request timeout, and the metadata refreshed then names the new
 * leader once the controller has fenced the old one (its session timeout).
 */
const STALL_TIMEOUT_MS = 10_000;
/** How long the broker may hold a fetch that finds nothing new (an open transaction past the read's position). */
const FETCH_WAIT_MS = 100;
const FETCH_MAX_BYTES = 1_048_576;
const FIRST_RETRY_MS = 50;
const MAX_RETRY_MS = 1_000;

const retriable = (err: unknown): boolean => (err as { retriable?: unknown } | undefined)?.retriable !== false;

export async function* readRange(admin: Admin, range: ReadRange): AsyncGenerator<ConsumedMessage> {
  const where = `reading ${range.topic}[${range.partition}]`;
  let next = range.from;
  let progressAt = performance.now();
  let retryMs = FIRST_RETRY_MS;
  let lastError: unknown;
  while (next < range.end) {
    if (performance.now() - progressAt > STALL_TIMEOUT_MS) {
      const why = lastError === undefined ? 'nothing new committed' : `last error: ${errorMessage(lastError)}`;
      throw new GovernedMemoryError('MEM_UNAVAILABLE', `kafka: ${where}: no progress for ${STALL_TIMEOUT_MS} ms at offset ${next} of ${range.end} (${why})`, { retriable: true });
    }
    let fetched: Awaited<ReturnType<Admin['fetchPartition']>>;
    try {
      fetched = await waitingOnKafka(() => admin.fetchPartition({
        topic: range.kafkaTopic, partition: range.partition, offset: String(next), maxWaitTime: FETCH_WAIT_MS, maxBytes: FETCH_MAX_BYTES,
      }));
    } catch (err) {
      if (!retriable(err)) throw unavailable(where, err);
      lastError = err;
      await new Promise((resolve) => setTimeout(resolve, retryMs));
      retryMs = Math.min(MAX_RETRY_MS, 2 * retryMs);
      continue;
    }
    retryMs = FIRST_RETRY_MS;
    lastError = undefined;
    const reached = Number(fetched.nextOffset);
    for (const record of fetched.messages) {
      const offset = Number(record.offset);
      // Records below `next` are dropped by fetchPartition already (a batch starts where it starts).
      if (offset >= range.end) continue;
      yield decodeMessage(range.topic, range.partition, record);
    }
    if (reached > next) {
      next = reached;
      progressAt = performance.now();
    }
  }
}
