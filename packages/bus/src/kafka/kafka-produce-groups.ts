/**
 * Group commit for the Kafka bus's produces, as the SQLite log has it: the produces of one turn
 * of the event loop that each go to a single partition (one API write's command, say) are
 * sent as one record batch per partition. The idempotent producer has one request in flight
 * at a time, so 64 concurrent writers each waited for the others' round trips one by one.
 *
 * A record batch of one partition is appended all or nothing, so every grouped call stays as
 * atomic as it was alone: it fails or succeeds with its group, and its positions are its own
 * slice of the group's. A group is bounded in bytes (a record batch must stay under the
 * broker's message size); a call bigger than the bound goes alone.
 */
import type { LogPosition } from '../port.ts';
import { encodedBytes, type EncodedMessage } from './kafka-codec.ts';

interface Queued {
  messages: readonly EncodedMessage[];
  bytes: number;
  resolve: (positions: LogPosition[]) => void;
  reject: (err: unknown) => void;
}

/** Well under Kafka's default max.message.bytes (1 MiB), as the consumers' chunks. */
export const MAX_GROUP_BYTES = 256 * 1024;

export class PartitionProduceGroups {
  private readonly queued = new Map<string, Queued[]>();
  private scheduled = false;
  private readonly inFlight = new Set<Promise<void>>();
  /**
   * Partitions with a request in flight: their next calls wait and go together in the next one.
   * Two requests of the idempotent producer for one partition at once took consecutive sequence
   * numbers; when the first failed while its leader moved, kafkajs rolled the counter back under
   * the second, and the broker refused what followed as out of order.
   */
  private readonly sending = new Set<string>();

  constructor(
    /** Sends messages that all go to one partition, in one request; their positions in order. */
    private readonly send: (messages: EncodedMessage[]) => Promise<LogPosition[]>,
    private readonly maxBytes: number = MAX_GROUP_BYTES,
  ) {}

  /** `messages` all go to the partition named by `partitionKey`. */
  add(partitionKey: string, messages: readonly EncodedMessage[]): Promise<LogPosition[]> {
    return new Promise<LogPosition[]>((resolve, reject) => {
      const list = this.queued.get(partitionKey) ?? [];
      list.push({ messages, bytes: encodedBytes(messages), resolve, reject });
      this.queued.set(partitionKey, list);
      if (this.scheduled) return;
      this.scheduled = true;
      // After the current turn: the produces that the I/O of this turn started travel together.
      setImmediate(() => this.flush());
    });
  }

  /** Resolves once everything added so far was sent (or failed). */
  async idle(): Promise<void> {
    while (this.queued.size > 0 || this.inFlight.size > 0) {
      this.flush();
      await Promise.all([...this.inFlight]);
    }
  }

  private flush(): void {
    this.scheduled = false;
    for (const [partitionKey, calls] of this.queued) {
      if (this.sending.has(partitionKey)) continue;
      this.queued.delete(partitionKey);
      this.sending.add(partitionKey);
      const sending = (async () => {
        for (const group of this.grouped(calls)) await this.sendGroup(group);
      })().finally(() => {
        this.sending.delete(partitionKey);
        // What queued up meanwhile goes now, as one request.
        if (this.queued.has(partitionKey)) this.flush();
      });
      this.inFlight.add(sending);
      void sending.finally(() => this.inFlight.delete(sending));
    }
  }

  /** Consecutive calls up to maxBytes a group, in call order. */
  private *grouped(calls: readonly Queued[]): Generator<Queued[]> {
    let group: Queued[] = [];
    let bytes = 0;
    for (const call of calls) {
      if (group.length > 0 && bytes + call.bytes > this.maxBytes) {
        yield group;
        group = [];
        bytes = 0;
      }
      group.push(call);
      bytes += call.bytes;
    }
    if (group.length > 0) yield group;
  }

  private async sendGroup(group: readonly Queued[]): Promise<void> {
    let positions: LogPosition[];
    try {
      positions = await this.send(group.flatMap((call) => call.messages));
    } catch (err) {
      for (const call of group) call.reject(err);
      return;
    }
    let at = 0;
    for (const call of group) {
      call.resolve(positions.slice(at, at + call.messages.length));
      at += call.messages.length;
    }
  }
}
