/**
 * Run by kafka-bus.int.spec.ts in a child process: consumes `in` as group `g` of the given
 * namespace, forwarding every message to `out` inside its consume transaction, until the
 * parent kills the process with SIGKILL mid-stream — a crash, not a shutdown. Its handler
 * never finishes value 60, so whenever the kill comes, the stream is not done: what it
 * handled after its last commit dies with it. It prints `committed <value>` on stdout as each
 * result commits (ctx.onCommitted), so the parent kills it on an event, not on a poll.
 * Usage: node --import tsx kafka-bus.crash-child.ts <brokers> <topicPrefix>
 */
import { createKafkaBus } from './kafka-bus.ts';

const [brokers, topicPrefix] = process.argv.slice(2);
if (brokers === undefined || topicPrefix === undefined) throw new Error('usage: kafka-bus.crash-child.ts <brokers> <topicPrefix>');

const STALL_AT = 60;

const bus = createKafkaBus({ brokers: brokers.split(','), clientId: 'gm-bus-crash-child', topicPrefix, sessionTimeoutMs: 6_000 });
await bus.subscribe({
  groupId: 'g',
  topics: ['in'],
  handler: async (message, ctx) => {
    ctx.send([{ topic: 'out', key: message.key, value: message.value }]);
    ctx.onCommitted(() => process.stdout.write(`committed ${String(message.value)}\n`));
    if (message.value === STALL_AT) await new Promise(() => undefined);
  },
});
// The consumer keeps the process alive until the parent kills it.
