import { createHash } from 'node:crypto';
import type { Bus, ConsumedMessage, LogPosition, ProcessContext } from '@gm/bus';
import {
  GovernedMemoryError, Id, MemoryCommand, MemoryEvent, TOPICS, dlqTopic, isGovernedMemoryError, isUnreadableContent, subjectKey,
  type CommandReply, type ServiceHandle,
} from '@gm/contracts';
import { decide, draftOf, evolveDraft, initialState, pruneIdempotency, type DecideContext, type SubjectState } from '@gm/domain';
import type { Logger, Metrics } from '@gm/observability';
import { PartitionView } from './partition-view.ts';

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
  /** Committed states: the fold of memory.events plus this instance's committed results. */
  private readonly states = new Map<string, SubjectState>();
  /**
   * Next unread offset of memory.events per partition: `catchUp` folds from there, which
   * brings in another instance's events after a partition moved here. Folding an event this
   * instance already merged changes nothing (evolve ignores stale duplicates).
   */
  private readonly folded = new Map<number, number>();
  /** A subject's idempotency slot count after its last pruning (pruneWhenGrown). */
  private readonly slotsAfterPrune = new Map<string, number>();
  /** Provisional states and fold decisions per partition (partition-view.ts). */
  private readonly views = new Map<number, PartitionView>();

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
    // One draft per subject for the whole catch-up: its maps change in place (evolveDraft),
    // instead of a copy of every map per event.
    const drafts = new Map<string, SubjectState>();
    let newest = '';
    for await (const message of this.deps.bus.readPartition(TOPICS.events, partition, next)) {
      next = message.offset + 1;
      const parsed = MemoryEvent.safeParse(message.value);
      if (!parsed.success) continue;
      const key = subjectKey(parsed.data.metadata.tenantId, parsed.data.metadata.subjectId);
      let draft = drafts.get(key);
      if (draft === undefined) drafts.set(key, (draft = draftOf(this.states.get(key) ?? initialState())));
      evolveDraft(draft, parsed.data);
      if (parsed.data.metadata.now > newest) newest = parsed.data.metadata.now;
      count += 1;
    }
    // Slots far past their window answer nothing any more: keep them out of memory. The margin
    // (a second window) covers commands stamped a little earlier than the newest event.
    const window = this.deps.decide.idempotencyWindowMs;
    for (const [key, draft] of drafts) {
      if (newest !== '') pruneIdempotency(draft, newest, 2 * window);
      this.states.set(key, draft);
    }
    this.folded.set(partition, next);
    return count;
  }

  handle = async (message: ConsumedMessage, ctx: ProcessContext): Promise<void> => {
    const view = this.view(message.partition);
    // First: whatever fails from here on, the view learns that this attempt will not count.
    ctx.onDiscarded(() => view.discard());
    // Commands and events are co-partitioned: this partition of memory.events holds the
    // whole history of every subject whose commands arrive here.
    const fold = view.mustFold(message.offset);
    if (fold) await this.catchUp(message.partition);
    view.handling(message.offset, fold);
    const parsed = MemoryCommand.safeParse(message.value);
    if (!parsed.success) {
      return this.rejectMalformed(message, ctx, parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
    }
    const command = parsed.data;
    const { metrics, log } = this.deps;
    const key = subjectKey(command.metadata.tenantId, command.metadata.subjectId);
    const state = view.get(key) ?? this.states.get(key) ?? initialState();
    let reply: CommandReply;
    try {
      if (command.type === 'WriteMemory') {
        const hash = createHash('sha256').update(command.data.content, 'utf8').digest('hex');
        if (hash !== command.data.contentHash) throw new GovernedMemoryError('MEM_VALIDATION', 'contentHash does not match the content');
        // The markers consumers see in place of unreadable content can never be real content.
        if (isUnreadableContent(command.data.content)) throw new GovernedMemoryError('MEM_VALIDATION', 'content uses a reserved value');
      }
      const decision = decide(command, state, this.deps.decide);
      ctx.send(decision.events.map((e) => ({ topic: TOPICS.events, key, value: e })));
      if (decision.events.length > 0) {
        const next = draftOf(state);
        for (const e of decision.events) evolveDraft(next, e);
        this.pruneWhenGrown(key, next, command.metadata.now);
        const merge = view.stage(key, next);
        ctx.onCommitted(() => merge(this.states));
      }
      reply = { commandId: command.metadata.commandId, outcome: 'accepted', result: decision.result };
      for (const e of decision.events) countEvent(metrics, e);
      if (decision.events.length > 0) {
        // The reply names where its last event landed, so the API waits for exactly that (§9).
        const accepted = reply;
        ctx.sendWithPositions((sent) => [{ topic: TOPICS.replies, key: command.metadata.commandId, value: withEventsAt(accepted, sent) }]);
        return;
      }
    } catch (err) {
      if (!isGovernedMemoryError(err)) throw err; // a bug or an outage: retry, then dead-letter
      reply = { commandId: command.metadata.commandId, outcome: 'rejected', code: err.code, detail: err.message, retriable: err.retriable };
      metrics.rejections.inc({ code: err.code });
      if (err.code === 'MEM_CONFLICT') metrics.conflicts.inc();
      log.info({ commandId: command.metadata.commandId, type: command.type, code: err.code }, 'command rejected');
    }
    ctx.send([{ topic: TOPICS.replies, key: command.metadata.commandId, value: reply }]);
  };

  /**
   * Every command leaves an idempotency slot for the window; a subject's slots are pruned
   * whenever they doubled since the last pruning (amortised: no scan per command), keeping
   * those within twice the window (see catchUp).
   */
  private pruneWhenGrown(key: string, draft: SubjectState, now: string): void {
    const slots = Object.keys(draft.idempotency).length;
    if (slots < Math.max(64, 2 * (this.slotsAfterPrune.get(key) ?? 0))) return;
    pruneIdempotency(draft, now, 2 * this.deps.decide.idempotencyWindowMs);
    this.slotsAfterPrune.set(key, Object.keys(draft.idempotency).length);
  }

  private view(partition: number): PartitionView {
    let view = this.views.get(partition);
    if (view === undefined) this.views.set(partition, (view = new PartitionView()));
    return view;
  }

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

function withEventsAt(reply: CommandReply, sent: readonly LogPosition[]): CommandReply {
  const last = sent.filter((p) => p.topic === TOPICS.events).at(-1);
  if (reply.outcome !== 'accepted' || last === undefined) return reply;
  return { ...reply, eventsAt: { partition: last.partition, offset: last.offset } };
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
