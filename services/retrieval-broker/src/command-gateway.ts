import type { Bus, LogPosition, Subscription } from '@gm/bus';
import { raise, type ConsistencyPoint, type Positions } from './consistency-token.ts';
import { within } from './within.ts';
import {
  CONSUMER_GROUPS, CommandReply, GovernedMemoryError, TOPICS, asErrorCode, subjectKey,
  type AcceptedResult, type MemoryCommand,
} from '@gm/contracts';

/** Consumer groups whose progress the API waits for before it answers a mutation. */
export const READ_YOUR_WRITES_GROUPS = [CONSUMER_GROUPS.projector, CONSUMER_GROUPS.indexBuilder] as const;

/** What a write that asked to wait only until it is stored (`Prefer: wait-for=stored`) waits for: the state store's projector. */
export const STORED_GROUPS = [CONSUMER_GROUPS.projector] as const;

/**
 * A semantic search sent with a consistency token waits for the vector-indexer too: vectors lag the keyword index, and the token promises that the
 * search sees the writes it names.
 */
export const SEMANTIC_READ_GROUPS = [...READ_YOUR_WRITES_GROUPS, CONSUMER_GROUPS.vectorIndexer] as const;

/**
 * A deletion job read with a consistency token waits for the deletion-orchestrator, which opens the job when it folds the event the 202 named:
 * without the wait, the job of a deletion just accepted answers 404 for a moment.
 */
export const DELETION_JOB_GROUPS = [CONSUMER_GROUPS.deletionOrchestrator] as const;

/**
 * Whether the projector shows a command's result (the record hash at its version). Offsets alone
 * are not exact on Kafka: the reply's transaction marker can become visible before the events
 * partition's, so the events end read after the reply may not include the events yet (seen once
 * in CI: a search right after a 201 missed the record). Once the projector has the result, the
 * events are visible, and the end read then includes them.
 */
export type ProjectionCheck = (tenant: string, result: AcceptedResult) => Promise<boolean>;

const CONFIRM_POLL_MS = 5;


/**
 * Sends commands to write-admission and waits for the reply (request/reply over
 * memory.replies, correlated by commandId). After an accepted reply it waits until the
 * projector and index-builder have folded the events, so the caller's next read sees them.
 */
export class CommandGateway {
  private readonly pending = new Map<string, (reply: CommandReply) => void>();
  private subscription: Subscription | undefined;

  constructor(
    private readonly bus: Bus,
    private readonly options: { instanceId: string; replyTimeoutMs: number; readYourWritesTimeoutMs: number },
    private readonly projected?: ProjectionCheck,
    /** Keeps the outcome of a reply that asks for it (`storedFor`: an asynchronous write's). */
    private readonly storeOutcome?: (reply: CommandReply) => Promise<void>,
  ) {}

  async start(): Promise<void> {
    this.subscription = await this.bus.subscribe({
      groupId: `retrieval-broker.replies.${this.options.instanceId}`,
      topics: [TOPICS.replies],
      fromBeginning: false,
      // Nobody waits on this group, and a restarted broker has no caller left for old replies:
      // it is this instance's alone, deleted when it closes, and it never sends. A reply handled
      // again after a refetch finds no caller and stores the same outcome.
      lazyCommitMs: 1_000,
      transient: true,
      sends: false,
      handler: async (message) => {
        const parsed = CommandReply.safeParse(message.value);
        if (!parsed.success) return;
        this.pending.get(parsed.data.commandId)?.(parsed.data);
        // Every instance keeps it (the same value): the one that sent it may be gone.
        if (parsed.data.storedFor !== undefined) await this.storeOutcome?.(parsed.data);
      },
    });
  }

  async close(): Promise<void> {
    await this.subscription?.close();
  }

  /**
   * Returns the accepted result, or throws the rejection as a coded error. `readYourWrites`
   * says whether the projections had folded the result before the wait ran out.
   */
  async send(command: MemoryCommand, groups: readonly string[] = READ_YOUR_WRITES_GROUPS): Promise<AcceptedResult & { readYourWrites: boolean; landed: Positions }> {
    const { outcomes: [outcome], readYourWrites, landed } = await this.sendAll([command], groups);
    if (outcome === undefined) throw new GovernedMemoryError('MEM_INTERNAL', 'no outcome for the command');
    if (outcome instanceof GovernedMemoryError) throw outcome;
    return { ...outcome, readYourWrites, landed };
  }

  /**
   * Sends commands together (one produce, so one group commit) and answers each on its own:
   * its accepted result, or its rejection (or reply timeout) as a coded error. Read-your-writes
   * is then waited for once per events partition, at the furthest of the batch's own events
   * there, by `groups` (READ_YOUR_WRITES_GROUPS; STORED_GROUPS for a write that needs no search
   * right away): `readYourWrites` says whether every accepted result was folded in time, and
   * `landed` names those positions (a consistency token's). Throws only when the commands could
   * not be appended at all.
   */
  async sendAll(commands: readonly MemoryCommand[], groups: readonly string[] = READ_YOUR_WRITES_GROUPS): Promise<{ outcomes: Array<AcceptedResult | GovernedMemoryError>; readYourWrites: boolean; landed: Positions }> {
    const replies = commands.map((command) => this.replyTo(command.metadata.commandId));
    // Settled from the start: a reply that times out while the produce runs is never unhandled.
    const settled = replies.map((r) => r.reply.catch((err: unknown) => err as GovernedMemoryError));
    try {
      const positions = await this.produceInTime(commands);
      const answers = await Promise.all(settled);
      const deadline = performance.now() + this.options.readYourWritesTimeoutMs;
      const furthest = new Map<number, number>();
      const retried: Array<{ tenant: string; result: AcceptedResult; partition: number }> = [];
      const outcomes = answers.map((answer, i): AcceptedResult | GovernedMemoryError => {
        if (answer instanceof Error) return answer;
        if (answer.outcome === 'rejected') return new GovernedMemoryError(asErrorCode(answer.code), answer.detail, { retriable: answer.retriable });
        if (answer.eventsAt !== undefined) {
          // The reply names its own events' position: wait for exactly that, not for whatever
          // other writers appended to the partition since (they would make concurrent writes convoy).
          raise(furthest, answer.eventsAt.partition, answer.eventsAt.offset);
        } else {
          // No event of its own (an idempotent retry answered with the first result): that
          // result's events are somewhere before the partition's end.
          const command = commands[i];
          if (command !== undefined) {
            const key = subjectKey(command.metadata.tenantId, command.metadata.subjectId);
            retried.push({ tenant: command.metadata.tenantId, result: answer.result, partition: positions[i]?.partition ?? this.bus.partitionFor(TOPICS.events, key) });
          }
        }
        return answer.result;
      });
      const waits = [
        ...[...furthest].map(([partition, offset]) => this.waitForGroups({ topic: TOPICS.events, partition, offset }, groups)),
        ...retried.map((r) => this.confirmRetried(r.tenant, r.result, r.partition, deadline, groups)),
      ];
      let readYourWrites = (await Promise.all(waits)).every(Boolean);
      // A retried result's events are before its partition's end: a token waits for that end.
      if (retried.length > 0) readYourWrites = (await this.raiseToEventsEnd(furthest, retried.map((r) => r.partition), deadline)) && readYourWrites;
      return { outcomes, readYourWrites, landed: furthest };
    } finally {
      for (const r of replies) r.dispose();
    }
  }

  /**
   * Sends commands without waiting for write-admission (asynchronous writes): returns, per
   * commands partition, the furthest offset they were appended at — durable once this returns.
   */
  async post(commands: readonly MemoryCommand[]): Promise<Positions> {
    const positions = await this.produceInTime(commands);
    const furthest = new Map<number, number>();
    for (const { partition, offset } of positions) raise(furthest, partition, offset);
    return furthest;
  }

  /**
   * Appends the commands, or MEM_TIMEOUT (503) once replyTimeoutMs has passed: while the cluster
   * moves leaders or a broker hangs, the client's produce retries on for longer than a caller
   * should wait for an answer (the fault suite saw requests unanswered after 30 s). The append
   * may still land: a retry with the same Idempotency-Key gets its result, as after a reply
   * timeout.
   */
  private async produceInTime(commands: readonly MemoryCommand[]): Promise<LogPosition[]> {
    const produced = await within(this.bus.produce(commands.map((command) => ({
      topic: TOPICS.commands, key: subjectKey(command.metadata.tenantId, command.metadata.subjectId), value: command,
    }))), this.options.replyTimeoutMs);
    if (produced !== undefined) return produced;
    throw new GovernedMemoryError(
      'MEM_TIMEOUT', 'the command was not durably in the log in time; it may still land: a retry with the same Idempotency-Key gets its result, a retry without one is a new request',
      { retriable: true },
    );
  }

  /** The reply to a command, or MEM_TIMEOUT after replyTimeoutMs; registered before the command is sent. */
  private replyTo(commandId: string): { reply: Promise<CommandReply>; dispose(): void } {
    let timer: NodeJS.Timeout | undefined;
    const reply = new Promise<CommandReply>((resolve, reject) => {
      this.pending.set(commandId, resolve);
      timer = setTimeout(
        () => reject(new GovernedMemoryError('MEM_TIMEOUT', 'no reply from write-admission in time; the command may still be decided: a retry with the same Idempotency-Key gets its result, a retry without one is a new request', { retriable: true })),
        this.options.replyTimeoutMs,
      );
    });
    return {
      reply,
      dispose: () => {
        clearTimeout(timer);
        this.pending.delete(commandId);
      },
    };
  }

  /** Read-your-writes of an idempotent retry's result: its partition's end, checked against the projection. */
  private async confirmRetried(tenant: string, result: AcceptedResult, partition: number, deadline: number, groups: readonly string[]): Promise<boolean> {
    const readYourWrites = await this.waitForEnd(partition, groups);
    if (!readYourWrites || this.projected === undefined || (await this.projected(tenant, result))) return readYourWrites;
    // The end was read before the events were visible: wait until they are, then for every group again.
    return (await this.confirm(tenant, result, deadline)) && (await this.waitForEnd(partition, groups));
  }

  /**
   * Waits until `groups` have passed a consistency point (consistency-token.ts): its events
   * positions, and for its commands first write-admission, then whatever it appended to the
   * events partition up to then (a command's events go to the same partition number). Answers
   * the events positions it waited for; undefined when `timeoutMs` ran out first.
   */
  async waitForPoint(point: ConsistencyPoint, groups: readonly string[], timeoutMs: number): Promise<Positions | undefined> {
    const deadline = performance.now() + timeoutMs;
    const left = () => Math.max(0, deadline - performance.now());
    const events = new Map(point.events);
    if (point.commands.size > 0) {
      const admitted = await Promise.all([...point.commands].map(([partition, offset]) =>
        this.bus.waitForCommitted(CONSUMER_GROUPS.writeAdmission, { topic: TOPICS.commands, partition, offset }, left())));
      if (!admitted.every(Boolean)) return undefined;
      if (!(await this.raiseToEventsEnd(events, point.commands.keys(), deadline))) return undefined;
    }
    const passed = await Promise.all([...events].flatMap(([partition, offset]) =>
      groups.map((group) => this.bus.waitForCommitted(group, { topic: TOPICS.events, partition, offset }, left()))));
    return passed.every(Boolean) ? events : undefined;
  }

  /** Moves each partition's position up to the last event memory.events holds there now; false when the ends could not be read by `deadline`. */
  private async raiseToEventsEnd(positions: Map<number, number>, partitions: Iterable<number>, deadline: number): Promise<boolean> {
    const ends = await this.eventsEnds(deadline - performance.now());
    if (ends === undefined) return false;
    for (const partition of partitions) {
      const last = (ends[partition] ?? 0) - 1;
      if (last >= 0) raise(positions, partition, last);
    }
    return true;
  }

  /** Polls the projection check until it holds or the read-your-writes deadline passes. */
  private async confirm(tenant: string, result: AcceptedResult, deadline: number): Promise<boolean> {
    if (this.projected === undefined) return true;
    for (;;) {
      if (await this.projected(tenant, result)) return true;
      if (performance.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, CONFIRM_POLL_MS));
    }
  }

  /** memory.events' end offsets, or undefined when they could not be read within `ms` (a broker that hangs). */
  private eventsEnds(ms: number): Promise<number[] | undefined> {
    return within(this.bus.endOffsets(TOPICS.events), ms);
  }

  /** Events and the reply were appended in one transaction: the events end usually includes them (see ProjectionCheck). */
  private async waitForEnd(partition: number, groups: readonly string[]): Promise<boolean> {
    const ends = await this.eventsEnds(this.options.readYourWritesTimeoutMs);
    if (ends === undefined) return false;
    const end = ends[partition] ?? 0;
    if (end === 0) return true;
    return this.waitForGroups({ topic: TOPICS.events, partition, offset: end - 1 }, groups);
  }

  private async waitForGroups(position: LogPosition, groups: readonly string[]): Promise<boolean> {
    // The write is accepted and durable by now: a committed-offsets read that fails (a
    // coordinator moving) makes it `pending`, as a wait that ran out does, not a 503.
    const results = await Promise.all(
      groups.map((g) => this.bus.waitForCommitted(g, position, this.options.readYourWritesTimeoutMs).catch(() => false)),
    );
    return results.every(Boolean);
  }
}

/**
 * The header every mutation answers with: `confirmed` once the projections folded the result
 * (the caller's next read sees it), `stored` once the state store did, for a write that asked
 * to wait only for that (reads by id see it; a search does once it carries the write's
 * consistency token), `pending` when the wait ran out first — accepted and durable, but a read
 * right now may not see it yet.
 */
export const READ_YOUR_WRITES_HEADER = 'read-your-writes';
export const readYourWritesValue = (result: { readYourWrites: boolean; storedOnly?: boolean }): 'confirmed' | 'stored' | 'pending' =>
  result.readYourWrites ? (result.storedOnly === true ? 'stored' : 'confirmed') : 'pending';
