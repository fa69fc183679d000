import type { Bus, LogPosition, Subscription } from '@gm/bus';
import {
  CommandReply, ERROR_CODES, GovernedMemoryError, TOPICS, subjectKey,
  type AcceptedResult, type ErrorCode, type MemoryCommand,
} from '@gm/contracts';

/** Consumer groups whose progress the API waits for before it answers a mutation. */
export const READ_YOUR_WRITES_GROUPS = ['projector', 'index-builder'] as const;

/**
 * Whether the projector shows a command's result (the record hash at its version). Offsets alone
 * are not exact on Kafka: the reply's transaction marker can become visible before the events
 * partition's, so the events end read after the reply may not include the events yet (seen once
 * in CI: a search right after a 201 missed the record). Once the projector has the result, the
 * events are visible, and the end read then includes them.
 */
export type ProjectionCheck = (tenant: string, result: AcceptedResult) => Promise<boolean>;

/** How often a confirmation is asked again while the projections lag. */
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
  ) {}

  async start(): Promise<void> {
    this.subscription = await this.bus.subscribe({
      groupId: `retrieval-broker.replies.${this.options.instanceId}`,
      topics: [TOPICS.replies],
      fromBeginning: false,
      // Nobody waits on this group, and a restarted broker has no caller left for old replies.
      lazyCommitMs: 100,
      handler: async (message) => {
        const parsed = CommandReply.safeParse(message.value);
        if (!parsed.success) return;
        this.pending.get(parsed.data.commandId)?.(parsed.data);
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
  async send(command: MemoryCommand): Promise<AcceptedResult & { readYourWrites: boolean }> {
    const { commandId } = command.metadata;
    const key = subjectKey(command.metadata.tenantId, command.metadata.subjectId);
    let timer: NodeJS.Timeout | undefined;
    const reply = new Promise<CommandReply>((resolve, reject) => {
      this.pending.set(commandId, resolve);
      timer = setTimeout(
        () => reject(new GovernedMemoryError('MEM_TIMEOUT', 'no reply from write-admission in time; retrying with the same Idempotency-Key is safe', { retriable: true })),
        this.options.replyTimeoutMs,
      );
    });
    try {
      const [position] = await this.bus.produce([{ topic: TOPICS.commands, key, value: command }]);
      const answer = await reply;
      if (answer.outcome === 'rejected') {
        throw new GovernedMemoryError(asCode(answer.code), answer.detail, { retriable: answer.retriable });
      }
      if (answer.eventsAt !== undefined) {
        // The reply names its own events' position: wait for exactly that, not for whatever
        // other writers appended to the partition since (they would make concurrent writes convoy).
        const own = { topic: TOPICS.events, partition: answer.eventsAt.partition, offset: answer.eventsAt.offset };
        return { ...answer.result, readYourWrites: await this.waitForGroups(own) };
      }
      // No event of its own (an idempotent retry answered with the first result): that result's
      // events are somewhere before the partition's end.
      const partition = position?.partition ?? this.bus.partitionFor(TOPICS.events, key);
      const deadline = performance.now() + this.options.readYourWritesTimeoutMs;
      let readYourWrites = await this.waitForEnd(partition);
      const tenant = command.metadata.tenantId;
      if (readYourWrites && this.projected !== undefined && !(await this.projected(tenant, answer.result))) {
        // The end was read before the events were visible: wait until they are, then for every group again.
        readYourWrites = (await this.confirm(tenant, answer.result, deadline)) && (await this.waitForEnd(partition));
      }
      return { ...answer.result, readYourWrites };
    } finally {
      clearTimeout(timer);
      this.pending.delete(commandId);
    }
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

  /** Events and the reply were appended in one transaction: the events end usually includes them (see ProjectionCheck). */
  private async waitForEnd(partition: number): Promise<boolean> {
    const end = (await this.bus.endOffsets(TOPICS.events))[partition] ?? 0;
    if (end === 0) return true;
    return this.waitForGroups({ topic: TOPICS.events, partition, offset: end - 1 });
  }

  private async waitForGroups(position: LogPosition): Promise<boolean> {
    const results = await Promise.all(
      READ_YOUR_WRITES_GROUPS.map((g) => this.bus.waitForCommitted(g, position, this.options.readYourWritesTimeoutMs)),
    );
    return results.every(Boolean);
  }
}

/**
 * The header every mutation answers with: `confirmed` once the projections folded the result
 * (the caller's next read sees it), `pending` when the wait ran out first — accepted and
 * durable, but a read right now may not see it yet.
 */
export const READ_YOUR_WRITES_HEADER = 'read-your-writes';
export const readYourWritesValue = (result: { readYourWrites: boolean }): 'confirmed' | 'pending' =>
  result.readYourWrites ? 'confirmed' : 'pending';

function asCode(code: string): ErrorCode {
  return (ERROR_CODES as readonly string[]).includes(code) ? (code as ErrorCode) : 'MEM_INTERNAL';
}
