/**
 * Where a memory.ingest request without a result stopped (docs/reliability.md "The fault
 * suite"): the topics it should have passed through, read_committed, in the pipeline's order.
 * A finding that only says "no result" leaves the next reader with nothing to go on.
 */
import type { Bus } from '@gm/bus';
import { CONSUMER_GROUPS, TOPICS, dlqTopic } from '@gm/contracts';

/** One line per request: how many copies Kafka holds, and how far each stage took it (`writtenByCommand`: the judge's fold of memory.events). */
export async function traceIngestRequests(
  bus: Bus, requestIds: readonly string[], writtenByCommand: ReadonlyMap<string, { id: string; version: number }>,
): Promise<Map<string, string>> {
  const wanted = new Set(requestIds);
  const traces = new Map<string, { copies: string[]; deadLetters: string[]; commands: string[]; events: string[] }>();
  const trace = (id: string) => {
    let t = traces.get(id);
    if (t === undefined) traces.set(id, (t = { copies: [], deadLetters: [], commands: [], events: [] }));
    return t;
  };
  if (wanted.size === 0) return new Map();
  for await (const m of bus.readAll(TOPICS.ingest)) {
    const id = (m.value as { requestId?: unknown } | null)?.requestId;
    if (typeof id === 'string' && wanted.has(id)) trace(id).copies.push(`${m.partition}@${m.offset}`);
  }
  for await (const m of bus.readAll(dlqTopic(TOPICS.ingest))) {
    const id = (m.value as { requestId?: unknown } | null)?.requestId;
    if (typeof id === 'string' && wanted.has(id)) trace(id).deadLetters.push(`${m.headers['dlq.offset'] ?? '?'}: ${m.headers['dlq.error'] ?? '?'}`);
  }
  for await (const m of bus.readAll(TOPICS.commands)) {
    const metadata = (m.value as { metadata?: { ingestRequestId?: unknown; commandId?: unknown } } | null)?.metadata;
    const id = metadata?.ingestRequestId;
    if (typeof id === 'string' && wanted.has(id)) trace(id).commands.push(`${String(metadata?.commandId)} at ${m.partition}@${m.offset}`);
  }
  // write-admission dead-letters a command that failed past its retries (never an outage's).
  for await (const m of bus.readAll(dlqTopic(TOPICS.commands))) {
    const id = (m.value as { metadata?: { ingestRequestId?: unknown } } | null)?.metadata?.ingestRequestId;
    if (typeof id === 'string' && wanted.has(id)) trace(id).deadLetters.push(`command: ${m.headers['dlq.error'] ?? '?'}`);
  }
  // The judge read memory.events already: a command's write, if it has one.
  for (const t of traces.values()) {
    for (const c of t.commands) {
      const written = writtenByCommand.get(c.split(' ')[0] ?? '');
      if (written !== undefined) t.events.push(`MemoryWritten ${written.id} v${written.version}`);
    }
  }
  // Where write-admission's group stands on each commands partition: past a command without its
  // events means the command was skipped, not waiting.
  const committed = await bus.committedOffsets(CONSUMER_GROUPS.writeAdmission, TOPICS.commands);
  for (const t of traces.values()) {
    t.commands = t.commands.map((c) => {
      const [partition, offset] = (c.split(' at ')[1] ?? '').split('@').map(Number);
      const past = partition !== undefined && offset !== undefined && (committed[partition] ?? 0) > offset;
      return `${c} (write-admission committed ${past ? 'past it' : 'below it'})`;
    });
  }
  const lines = new Map<string, string>();
  for (const id of requestIds) {
    const t = traces.get(id);
    const part = (name: string, list: readonly string[] | undefined) => `${name}: ${list === undefined || list.length === 0 ? 'none' : list.join(', ')}`;
    lines.set(id, [part('on memory.ingest', t?.copies), part('dead-lettered', t?.deadLetters), part('commands', t?.commands), part('events', t?.events)].join('; '));
  }
  return lines;
}
