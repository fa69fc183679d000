/**
 * Run by sqlite-bus.int.spec.ts in a child process: appends, commits, then kills itself with
 * SIGKILL while a handler is still in flight and the bus is open — a crash, not a shutdown.
 * Usage: node --import tsx sqlite-bus.crash-child.ts <file>
 */
import { createSqliteBus } from './sqlite-bus.ts';

const file = process.argv[2];
if (file === undefined) throw new Error('usage: sqlite-bus.crash-child.ts <file>');

const bus = createSqliteBus({ file });
await bus.ensureTopics([{ name: 'crash', partitions: 1 }, { name: 'crash.out', partitions: 1 }]);
await bus.produce([1, 2, 3].map((value) => ({ topic: 'crash', key: 'k', value })));
await bus.subscribe({
  groupId: 'crash-group',
  topics: ['crash'],
  handler: async (message, ctx) => {
    ctx.send([{ topic: 'crash.out', key: message.key, value: message.value }]);
    // The third message never finishes: the crash happens with it in flight.
    if (message.value === 3) await new Promise<never>(() => undefined);
  },
});
await bus.waitForCommitted('crash-group', { topic: 'crash', partition: 0, offset: 1 }, 10_000);
process.kill(process.pid, 'SIGKILL');
