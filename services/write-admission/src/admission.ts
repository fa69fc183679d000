import { createHash } from 'node:crypto';
import type { Bus, ConsumedMessage, ProcessContext } from '@gm/bus';
import {
  GovernedMemoryError, Id, MemoryCommand, MemoryEvent, TOPICS, dlqTopic, isGovernedMemoryError, subjectKey,
  type CommandReply, type ServiceHandle,
} from '@gm/contracts';
import { decide, evolve, initialState, type DecideContext, type SubjectState } from '@gm/domain';
import type { Logger, Metrics } from '@gm/observability';

export const WRITE_ADMISSION_GROUP = 'write-admission';

export interface WriteAdmissionDeps {
  bus: Bus;
  log: Logger;
  metrics: Metrics;
  decide: DecideContext;
}

/**
 * The single writer of memory.events (§4, §5). Keeps every aggregate's state in memory,
 * rebuilt from memory.events at start; for each command: validate, decide, and append the
 * events and the reply in the same transaction that commits the command's offset.
 */
export class WriteAdmission {
  private readonly states = new Map<string, SubjectState>();
  /**
   * Next unread offset of memory.events per partition. The state is always the fold of the log
   * up to there: before each command the partition's new events are folded — this instance's
   * own events of the previous command, or another instance's after a partition moved here. A
   * command whose transaction failed left no events, so it left no trace in the state either.
   */
  private readonly folded = new Map<number, number>();
  /**
   * The previous command of each partition and the state its events lead to. When the next
   * command is its direct successor, nobody else can have written this partition in between
   * (one owner at a time, in order), so the staged state is exact and the log need not be
   * read — reading it costs a round trip per command on Kafka. Any other case (a redelivery,
   * a gap after a takeover, a first command) folds the log instead.
   */
  private readonly staged = new Map<number, { offset: number; change?: { key: string; state: SubjectState } }>();

  constructor(private readonly deps: WriteAdmissionDeps) {}

  /** Folds every partition of memory.events; returns how many events were folded. */
  async rebuild(): Promise<number> {
    let count = 0;
    const partitions = (await this.deps.bus.endOffsets(TOPICS.events)).length;
    for (let p = 0; p < partitions; p += 1) count += await this.catchUp(p);
    return count;
  }

  private async catchUp(partition: number): Promise<number> {
    let count = 0;
    let next = this.folded.get(partition) ?? 0;
    for await (const message of this.deps.bus.readPartition(TOPICS.events, partition, next)) {
      next = message.offset + 1;
      const parsed = MemoryEvent.safeParse(message.value);
      if (!parsed.success) continue;
      const key = subjectKey(parsed.data.metadata.tenantId, parsed.data.metadata.subjectId);
      this.states.set(key, evolve(this.states.get(key) ?? initialState(), parsed.data));
      count += 1;
    }
    this.folded.set(partition, next);
    return count;
  }

  handle = async (message: ConsumedMessage, ctx: ProcessContext): Promise<void> => {
    // Commands and events are co-partitioned: this partition of memory.events holds the
    // whole history of every subject whose commands arrive here.
    const staged = this.staged.get(message.partition);
    this.staged.delete(message.partition);
    if (staged && message.offset === staged.offset + 1) {
      if (staged.change) this.states.set(staged.change.key, staged.change.state);
    } else {
      await this.catchUp(message.partition);
    }
    // Until this command's outcome is known, its successor folds the log (set again below).
    this.staged.set(message.partition, { offset: Number.NaN });
    const parsed = MemoryCommand.safeParse(message.value);
    if (!parsed.success) {
      this.staged.set(message.partition, { offset: message.offset });
      return this.rejectMalformed(message, ctx, parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
    }
    const command = parsed.data;
    const { metrics, log } = this.deps;
    const key = subjectKey(command.metadata.tenantId, command.metadata.subjectId);
    const state = this.states.get(key) ?? initialState();
    let reply: CommandReply;
    try {
      if (command.type === 'WriteMemory') {
        const hash = createHash('sha256').update(command.data.content, 'utf8').digest('hex');
        if (hash !== command.data.contentHash) throw new GovernedMemoryError('MEM_VALIDATION', 'contentHash does not match the content');
      }
      const decision = decide(command, state, this.deps.decide);
      ctx.send(decision.events.map((e) => ({ topic: TOPICS.events, key, value: e })));
      this.staged.set(message.partition, { offset: message.offset, change: { key, state: decision.events.reduce(evolve, state) } });
      reply = { commandId: command.metadata.commandId, outcome: 'accepted', result: decision.result };
      for (const e of decision.events) countEvent(metrics, e);
    } catch (err) {
      if (!isGovernedMemoryError(err)) throw err; // a bug or an outage: retry, then dead-letter
      this.staged.set(message.partition, { offset: message.offset });
      reply = { commandId: command.metadata.commandId, outcome: 'rejected', code: err.code, detail: err.message, retriable: err.retriable };
      metrics.rejections.inc({ code: err.code });
      if (err.code === 'MEM_CONFLICT') metrics.conflicts.inc();
      log.info({ commandId: command.metadata.commandId, type: command.type, code: err.code }, 'command rejected');
    }
    ctx.send([{ topic: TOPICS.replies, key: command.metadata.commandId, value: reply }]);
  };

  /** A command that is not even well-formed cannot be replied to reliably: dead-letter it at once. */
  private rejectMalformed(message: ConsumedMessage, ctx: ProcessContext, error: string): void {
    const value = message.value as { metadata?: { commandId?: unknown } } | null;
    // Reply only to a well-formed id: memory.replies must carry valid CommandReply messages.
    const parsedId = Id.safeParse(value?.metadata?.commandId);
    const commandId = parsedId.success ? parsedId.data : undefined;
    ctx.send([
      {
        topic: dlqTopic(message.topic),
        key: message.key,
        value: message.value,
        headers: {
          'dlq.topic': message.topic, 'dlq.partition': String(message.partition), 'dlq.offset': String(message.offset),
          'dlq.error': `invalid command: ${error}`.slice(0, 1000), 'dlq.attempts': '1', 'dlq.group': WRITE_ADMISSION_GROUP,
        },
      },
    ]);
    if (commandId) {
      const reply: CommandReply = { commandId, outcome: 'rejected', code: 'MEM_VALIDATION', detail: 'invalid command', retriable: false };
      ctx.send([{ topic: TOPICS.replies, key: commandId, value: reply }]);
    }
    this.deps.metrics.deadLetters.inc({ topic: message.topic });
    this.deps.log.warn({ topic: message.topic, partition: message.partition, offset: message.offset }, 'malformed command dead-lettered');
  }
}

function countEvent(metrics: Metrics, e: MemoryEvent): void {
  switch (e.type) {
    case 'MemoryWritten':
      metrics.writes.inc({ status: e.data.record.status });
      if (e.data.record.status === 'quarantined') metrics.quarantines.inc();
      break;
    case 'MemoryPromoted':
      metrics.promotions.inc();
      break;
    case 'MemorySuperseded':
      metrics.supersessions.inc();
      break;
    case 'MemoryExpired':
      metrics.expirations.inc();
      break;
    case 'MemoryRevocationRequested':
      metrics.revocations.inc({ mode: e.data.mode });
      break;
    case 'SubjectForgotten':
      metrics.forgets.inc();
      break;
    default:
      break;
  }
}

export async function startWriteAdmission(deps: WriteAdmissionDeps): Promise<ServiceHandle> {
  const admission = new WriteAdmission(deps);
  const events = await admission.rebuild();
  deps.log.info({ events }, 'write-admission state rebuilt from memory.events');
  const sub = await deps.bus.subscribe({ groupId: WRITE_ADMISSION_GROUP, topics: [TOPICS.commands], handler: admission.handle });
  return { close: () => sub.close() };
}
