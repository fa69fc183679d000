/**
 * Run by kafka-bus.int.spec.ts in a child process: consumes `in` as group `g` of the given
 * namespace, forwarding every message to `out` inside its consume transaction, until the
 * parent kills the process with SIGKILL mid-stream — a crash, not a shutdown.
 * Usage: node --import tsx kafka-bus.crash-child.ts <brokers> <topicPrefix>
 */
import { createKafkaBus } from './kafka-bus.ts';

const [brokers, topicPrefix] = process.argv.slice(2);
if (brokers === undefined || topicPrefix === undefined) throw new Error('usage: kafka-bus.crash-child.ts <brokers> <topicPrefix>');

const bus = createKafkaBus({ brokers: brokers.split(','), clientId: 'gm-bus-crash-child', topicPrefix, sessionTimeoutMs: 6_000 });
await bus.subscribe({
  groupId: 'g',
  topics: ['in'],
  handler: async (message, ctx) => {
    ctx.send([{ topic: 'out', key: message.key, value: message.value }]);
  },
});
// The consumer keeps the process alive until the parent kills it.
