import { createHash } from 'node:crypto';
import { withMessageContext, type Bus, type ConsumedMessage, type LogPosition, type OutgoingMessage, type ProcessContext } from '@gm/bus';
import {
  CONSUMER_GROUPS, GovernedMemoryError, Id, MemoryCommand, MemoryEvent, TOPICS, dlqTopic, ingestResultsTopic, readMemoryEvent, isGovernedMemoryError, isUnreadableContent, subjectKey,
  type CommandReply, type IngestResult, type ServiceHandle,
} from '@gm/contracts';
import { decide, draftOf, evolveDraft, pruneIdempotency, type DecideContext, type SubjectState } from '@gm/domain';
import type { Logger, Metrics } from '@gm/observability';
import { periodic } from '@gm/time';
import type { SnapshotSealer } from '@gm/crypto';
import type { AdmissionSnapshots } from '@gm/state-store';
import { CommittedStates, markPendingContent } from './committed-states.ts';
import { PartitionView } from './partition-view.ts';

export const WRITE_ADMISSION_GROUP = CONSUMER_GROUPS.writeAdmission;

export interface WriteAdmissionDeps {
  bus: Bus;
  log: Logger;
  metrics: Metrics;
  decide: DecideContext;
  snapshots: SnapshotOptions;
}

export interface SnapshotOptions {
  store: AdmissionSnapshots;
  /** How often changed states and checkpoints are stored (and memory trimmed). */
  intervalMs: number;
  /** About how many records and idempotency slots to keep in memory. */
  maxEntries: number;
  /** Seals the content hashes and request fingerprints of the stored states under each subject's key (§8.5). */
  sealer?: SnapshotSealer;
}

/**
 * The single writer of memory.events (§4, §5). For each command: validate, decide on the
 * subject's state, and append the events and the reply in the same transaction that commits
 * the command's offset. Subject states are the fold of memory.events: kept in memory as far
 * as `maxEntries` allows and stored as snapshots (committed-states.ts), so a restart folds
 * only the events past the stored checkpoint and loads other subjects when they are needed.
 */
export class WriteAdmission {
  private readonly states: CommittedStates;
  /** A subject's idempotency slot count after its last pruning, and commands since (pruneWhenGrown). */
  private readonly slotsAfterPrune = new Map<string, { after: number; added: number }>();
  /** Provisional states and fold decisions per partition (partition-view.ts). */
  private readonly views = new Map<number, PartitionView>();

  constructor(private readonly deps: WriteAdmissionDeps) {
    this.states = new CommittedStates({
      store: deps.snapshots.store, maxEntries: deps.snapshots.maxEntries, onEvicted: (key) => this.slotsAfterPrune.delete(key),
      ...(deps.snapshots.sealer === undefined ? {} : { sealer: deps.snapshots.sealer }),
    });
  }

  /** Folds every partition of memory.events from its stored checkpoint; returns how many events were folded. */
  async rebuild(): Promise<number> {
    let count = 0;
    const partitions = (await this.deps.bus.endOffsets(TOPICS.events)).length;
    const endOf = (p: number) => async () => (await this.deps.bus.endOffsets(TOPICS.events))[p] ?? 0;
    for (let p = 0; p < partitions; p += 1) count += await this.catchUp(p, endOf(p));
    return count;
  }

  /**
   * Stores changed states and checkpoints now (also runs every `intervalMs`); `all` also loads
   * and stores every subject whose events are only deferred, so the checkpoint reaches the end.
   */
  flush(options: { all?: boolean } = {}): Promise<void> {
    return this.states.flush(options);
  }

  /** Records and idempotency slots held in memory. */
  get heldEntries(): number {
    return this.states.size;
  }

  /**
   * Folds the partition's events past what this instance has (or past the stored checkpoint)
   * into the committed states. Commands and events are co-partitioned: this partition of
   * memory.events holds the whole history of every subject whose commands arrive here.
   */
  private async catchUp(partition: number, endNow?: () => Promise<number>): Promise<number> {
    let next = await this.states.startPoint(partition, endNow);
    const { maxEntries } = this.deps.snapshots;
    const window = this.deps.decide.idempotencyWindowMs;
    // One draft per subject held in memory: its maps change in place (evolveDraft), instead of
    // a copy of every map per event. Subjects not in memory only get the events deferred.
    const drafts = new Map<string, SubjectState>();
    /** Per draft, the offset below which its events are in it already (a state stored ahead of the checkpoint). */
    const foldedBelow = new Map<string, number>();
    let folded = 0;
    let count = 0;
    let newest = '';
    const commitDrafts = (): void => {
      for (const [key, draft] of drafts) {
        // Slots far past their window answer nothing any more: keep them out of memory. The
        // margin (a second window) covers commands stamped a little earlier than the newest event.
        if (newest !== '') pruneIdempotency(draft, newest, 2 * window);
        this.states.set(key, partition, draft);
      }
      drafts.clear();
      foldedBelow.clear();
      folded = 0;
      this.states.advance(partition, next);
    };
    for await (const message of this.deps.bus.readPartition(TOPICS.events, partition, next)) {
      next = message.offset + 1;
      const event = readMemoryEvent(message);
      const key = subjectKey(event.metadata.tenantId, event.metadata.subjectId);
      count += 1;
      if (event.metadata.now > newest) newest = event.metadata.now;
      let draft = drafts.get(key);
      if (draft === undefined) {
        const held = this.states.get(key);
        if (held !== undefined) {
          drafts.set(key, (draft = draftOf(held)));
          foldedBelow.set(key, this.states.foldedBelow(key));
        }
      }
      if (draft === undefined) {
        this.states.defer(key, partition, event, message.offset);
      } else if (message.offset >= (foldedBelow.get(key) ?? 0)) {
        evolveDraft(draft, event);
        markPendingContent(draft, event, message.offset);
        folded += 1;
      }
      // A long fold (a first start, a lost store) must not hold the whole log in memory: what
      // it has so far is committed, stored and trimmed, and the fold goes on from there. An
      // event adds about two entries (a record and a slot); the margin keeps this rare.
      if (this.states.size + 2 * folded >= 1.5 * maxEntries) {
        commitDrafts();
        await this.states.flush({ all: true });
      }
    }
    commitDrafts();
    return count;
  }

  /**
   * A batch of one partition's commands, decided in order, each on the state its predecessors
   * left: their events and replies are appended, and the states merged, only with the commit of
   * the batch's offsets. Sealing the batch's events together lets the key store create the data
   * keys of all its new records with one append.
   */
  handleBatch = async (messages: readonly ConsumedMessage[], ctx: ProcessContext): Promise<void> => {
    const first = messages[0];
    if (first === undefined) return;
    const view = this.view(first.partition);
    // First: whatever fails from here on, the view learns that this attempt will not count.
    ctx.onDiscarded(() => view.discard());
    const batch: Batch = { ctx, events: 0, replies: [], committed: [], drafts: new Set(), erasing: false };
    // Each command's events continue its own trace (docs/operations.md#traces).
    for (const message of messages) await withMessageContext(message, () => this.admit(message, view, batch));
    // Only commands that appended events leave a reply and a merge for the commit.
    if (batch.replies.length === 0) return;
    // Where the batch's events landed, known inside the commit: replies name their own (§9).
    let landed: readonly LogPosition[] = [];
    ctx.sendWithPositions((sent) => {
      landed = sent.filter((p) => p.topic === TOPICS.events);
      return batch.replies.map((reply) => reply(landed));
    });
    ctx.onCommitted(() => {
      for (const merge of batch.committed) merge(landed);
      // A purge rewrites the subject's snapshot at once, not at the next interval: the stored
      // state before it holds the records' hashes, provenance and request fingerprints, and the
      // deletion's `key` target waits for this rewrite before it makes the store's files forget
      // the old bytes (§8.4; docs/deletion.md#erasure-on-disk).
      if (batch.erasing) this.flushSoon();
    });
  };

  /** Stores the changed states now, off the command path; a failure is retried by the next flush. */
  private flushSoon(): void {
    this.states.flush().catch((err: unknown) => this.deps.log.warn({ err }, 'write-admission snapshot after a purge failed'));
  }

  /** One command on its own: a batch of one (a bus hands write-admission batches). */
  handle = (message: ConsumedMessage, ctx: ProcessContext): Promise<void> => this.handleBatch([message], ctx);

  private async admit(message: ConsumedMessage, view: PartitionView, batch: Batch): Promise<void> {
    const { ctx } = batch;
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
    // Outside the try: a store or log outage is retried by the bus, never a rejection.
    const committed = view.get(key) ?? (await this.states.load(key, message.partition));
    const state = command.type === 'PromoteMemory' ? await this.withPendingContent(committed, command.data.id, message.partition) : committed;
    let reply: CommandReply;
    try {
      if (command.type === 'WriteMemory') {
        const hash = createHash('sha256').update(command.data.content, 'utf8').digest('hex');
        if (hash !== command.data.contentHash) throw new GovernedMemoryError('MEM_VALIDATION', 'contentHash does not match the content');
        // The markers consumers see in place of unreadable content can never be real content.
        if (isUnreadableContent(command.data.content)) throw new GovernedMemoryError('MEM_VALIDATION', 'content uses a reserved value');
      }
      const decision = decide(command, state, this.deps.decide);
      reply = { commandId: command.metadata.commandId, outcome: 'accepted', result: decision.result, ...storedFor(command) };
      for (const e of decision.events) countEvent(metrics, e);
      if (decision.events.length > 0) {
        ctx.send(decision.events.map((e) => ({ topic: TOPICS.events, key, value: e })));
        // This command's events among the batch's, in send order.
        const from = batch.events;
        batch.events += decision.events.length;
        // A draft this batch made already is changed in place: only this batch's closures and
        // the view's pending entry hold it, and both go with the batch. Any other state (the
        // committed one, or one an earlier, still uncommitted batch staged) is copied once per
        // batch, not once per command: a copy costs the subject's every record and slot.
        const next = batch.drafts.has(state) ? state : draftOf(state);
        batch.drafts.add(next);
        for (const e of decision.events) evolveDraft(next, e);
        if (decision.events.some((e) => e.type === 'MemoryPurged')) batch.erasing = true;
        this.pruneWhenGrown(key, next, command.metadata.now);
        const settle = view.stage(key, next);
        const partition = message.partition;
        batch.committed.push((landed) => {
          settle();
          const own = landed.slice(from, from + decision.events.length);
          decision.events.forEach((e, i) => {
            const at = own[i];
            if (at !== undefined) markPendingContent(next, e, at.offset);
          });
          this.states.set(key, partition, next);
          const last = own.at(-1);
          if (last !== undefined) this.states.advance(partition, last.offset + 1);
        });
        // The reply names where its last event landed, so the API waits for exactly that (§9).
        const accepted = reply;
        batch.replies.push((landed) => answerTo(command, withEventsAt(accepted, landed.slice(from, from + decision.events.length))));
        return;
      }
    } catch (err) {
      if (!isGovernedMemoryError(err)) throw err; // a bug or an outage: retry, then dead-letter
      reply = { commandId: command.metadata.commandId, outcome: 'rejected', code: err.code, detail: err.message, retriable: err.retriable, ...storedFor(command) };
      metrics.rejections.inc({ code: err.code });
      if (err.code === 'MEM_CONFLICT') metrics.conflicts.inc();
      log.info({ commandId: command.metadata.commandId, type: command.type, code: err.code }, 'command rejected');
    }
    ctx.send([answerTo(command, reply)]);
  }

  /**
   * Every command leaves an idempotency slot for the window; a subject's slots are pruned
   * whenever they doubled since the last pruning (amortised: no scan per command), keeping
   * those within twice the window (see catchUp).
   */
  private pruneWhenGrown(key: string, draft: SubjectState, now: string): void {
    // A command adds at most one slot, so counting commands bounds the slots from above
    // without counting the map's keys (a scan of every slot) on every command.
    const counted = this.slotsAfterPrune.get(key);
    const slots = counted === undefined ? Object.keys(draft.idempotency).length : counted.after + counted.added + 1;
    if (slots < Math.max(64, 2 * (counted?.after ?? 0))) {
      this.slotsAfterPrune.set(key, { after: counted?.after ?? 0, added: counted === undefined ? slots : counted.added + 1 });
      return;
    }
    pruneIdempotency(draft, now, 2 * this.deps.decide.idempotencyWindowMs);
    this.slotsAfterPrune.set(key, { after: Object.keys(draft.idempotency).length, added: 0 });
  }

  /**
   * A promotion hands the quarantined content to the index, but a state loaded from the store
   * has only where the content lies in the log: read it back from that one event.
   */
  private async withPendingContent(state: SubjectState, id: string, partition: number): Promise<SubjectState> {
    const record = state.records[id];
    if (record === undefined || record.meta.status !== 'quarantined' || record.pendingContent !== undefined || record.pendingAt === undefined) {
      return state;
    }
    for await (const message of this.deps.bus.readPartition(TOPICS.events, partition, record.pendingAt)) {
      const event = readMemoryEvent(message);
      if (message.offset === record.pendingAt && event.type === 'MemoryWritten'
        && event.data.record.id === id && event.data.record.version === record.meta.version) {
        const draft = draftOf(state);
        draft.records[id] = { ...record, pendingContent: event.data.record.content };
        return draft;
      }
      break;
    }
    // A bug or a damaged log, never a user error: retried, then dead-lettered.
    throw new Error(`the quarantined write of record ${id} is not at offset ${record.pendingAt} of memory.events partition ${partition}`);
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

/** What the commands of one batch leave for the commit: replies built from the events' positions, and state merges. */
interface Batch {
  ctx: ProcessContext;
  /** Events sent so far by the batch's commands. */
  events: number;
  replies: Array<(landed: readonly LogPosition[]) => OutgoingMessage>;
  committed: Array<(landed: readonly LogPosition[]) => void>;
  /** The subject states this batch drafted: its own to change in place. */
  drafts: Set<SubjectState>;
  /** Whether a command purged records: their subjects' snapshots are rewritten once it commits. */
  erasing: boolean;
}

/**
 * Where a command's outcome goes: its reply on memory.replies, where the API waits for it, or
 * for a memory.ingest request (docs/ingest.md) its one result on its tenant's results topic,
 * keyed by the producer's requestId and naming the tenant and principal the gateway verified
 * (design §4.1; the gateway created the topic before it sent the command); nobody waits on
 * memory.replies for those.
 */
function answerTo(command: MemoryCommand, reply: CommandReply): OutgoingMessage {
  const requestId = command.metadata.ingestRequestId;
  if (requestId === undefined) return { topic: TOPICS.replies, key: command.metadata.commandId, value: reply };
  return { topic: ingestResultsTopic(command.metadata.tenantId), key: requestId, value: ingestResultOf(requestId, command, reply) };
}

function ingestResultOf(requestId: string, command: MemoryCommand, reply: CommandReply): IngestResult {
  const { commandId, tenantId: tenant, actor } = command.metadata;
  const answered = { tenant, principal: actor.principalId, requestId };
  if (reply.outcome === 'rejected') return { ...answered, outcome: 'rejected', code: reply.code, detail: reply.detail, retriable: reply.retriable, commandId };
  const { id, version, status } = reply.result;
  // Only WriteMemory commands come from memory.ingest, and an accepted write always names its record.
  if (id === undefined || version === undefined || status === undefined) throw new Error(`an accepted ${command.type} named no record`);
  return { ...answered, outcome: 'accepted', commandId, id, version, status };
}

/** An asynchronous write's reply says whose outcome the API keeps (GET /v1/commands/{id}). */
const storedFor = (command: MemoryCommand): { storedFor?: { tenantId: string; principalId: string } } =>
  command.metadata.storeOutcome === true ? { storedFor: { tenantId: command.metadata.tenantId, principalId: command.metadata.actor.principalId } } : {};

function withEventsAt(reply: CommandReply, events: readonly LogPosition[]): CommandReply {
  const last = events.at(-1);
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
  deps.log.info({ events, held: admission.heldEntries }, 'write-admission state rebuilt from the snapshots and memory.events');
  const sub = await deps.bus.subscribe({ groupId: WRITE_ADMISSION_GROUP, topics: [TOPICS.commands], batchHandler: admission.handleBatch });
  // A store outage only delays the snapshots: the log stays the truth, and the next flush retries.
  const snapshots = periodic(deps.snapshots.intervalMs, () => admission.flush(), deps.log, 'write-admission snapshot');
  return {
    close: async () => {
      await snapshots.close();
      await sub.close();
      // A clean stop stores everything: the next start folds nothing.
      await admission.flush({ all: true }).catch((err: unknown) => deps.log.warn({ err }, 'write-admission snapshot at stop failed'));
    },
  };
}
