/**
 * Run by admission.crash.int.spec.ts in a child process: write-admission over the embedded bus
 * file it is given, with a backlog of commands already on the log, so its first transaction
 * covers a large batch. While that transaction is being written — inside the commit, as the
 * replies up to command number `killAt` are built — the process kills itself with SIGKILL.
 * Usage: node --import tsx admission.crash-child.ts <bus file> <state file> <killAt>
 */
import { createSqliteBus, type Bus } from '@gm/bus';
import { DEFAULT_TTL_POLICY } from '@gm/domain';
import { createLogger, createMetrics } from '@gm/observability';
import { StateStore, createSqliteKeyValueStore } from '@gm/state-store';
import { startWriteAdmission } from './admission.ts';

const [file, stateFile, killAtText] = process.argv.slice(2);
if (file === undefined || stateFile === undefined || killAtText === undefined) {
  throw new Error('usage: admission.crash-child.ts <bus file> <state file> <killAt>');
}
const killAt = Number(killAtText);
const inner = createSqliteBus({ file });
let built = 0;
// The bus as write-admission sees it, except that building the replies that reach the killAt-th kills the process.
const subscribe: Bus['subscribe'] = (options) =>
  options.batchHandler === undefined
    ? inner.subscribe(options)
    : inner.subscribe({
        ...options,
        batchHandler: (messages, ctx) =>
          options.batchHandler(messages, {
            ...ctx,
            sendWithPositions: (build) =>
              ctx.sendWithPositions((sent) => {
                const replies = build(sent);
                built += replies.length;
                if (built >= killAt) process.kill(process.pid, 'SIGKILL');
                return replies;
              }),
          }),
      });
const bus = new Proxy(inner, {
  get: (target, prop, receiver) => {
    if (prop === 'subscribe') return subscribe;
    const value: unknown = Reflect.get(target, prop, receiver);
    return typeof value === 'function' ? value.bind(target) : value;
  },
});
await startWriteAdmission({
  bus, log: createLogger({ name: 'crash-child', level: 'silent' }), metrics: createMetrics(),
  decide: { ttl: DEFAULT_TTL_POLICY, idempotencyWindowMs: 3_600_000 },
  snapshots: { store: new StateStore(createSqliteKeyValueStore({ file: stateFile }), 'gm:').admission, intervalMs: 60_000, maxEntries: 1_000 },
});
await new Promise<never>(() => undefined);
