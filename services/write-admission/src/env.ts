import { z } from 'zod';
import { DistributedEnv, WithMasterKeys, WithRedis, duration, integer, parseDuration } from '@gm/config';
import type { MemoryKind } from '@gm/contracts';
import { DEFAULT_TTL_POLICY, type TtlPolicy } from '@gm/domain';

const KINDS: MemoryKind[] = ['working_note', 'fact', 'skill', 'preference'];
const ttlVar = (kind: MemoryKind) => `MEMORY_TTL_${kind.toUpperCase()}`;
const KIND_PLURALS: Record<MemoryKind, string> = { working_note: 'working notes', fact: 'facts', skill: 'skills', preference: 'preferences' };
const fmt = (s: number) => `${Math.round(s / 86400)}d`;

/** "default,max" per kind, e.g. MEMORY_TTL_FACT=90d,365d; read the same way by the embedded runtime and the service. */
export const ttlShape = Object.fromEntries(
  KINDS.map((kind) => [
    ttlVar(kind),
    z
      .string()
      .default(`${fmt(DEFAULT_TTL_POLICY[kind].defaultSeconds)},${fmt(DEFAULT_TTL_POLICY[kind].maxSeconds)}`)
      .transform((v, ctx) => {
        const [d, m, extra] = v.split(',');
        try {
          if (!d || !m || extra !== undefined) throw new Error('expected "default,max", e.g. 90d,365d');
          const defaultSeconds = parseDuration(d) / 1000;
          const maxSeconds = parseDuration(m) / 1000;
          if (defaultSeconds <= 0 || defaultSeconds > maxSeconds) throw new Error('need 0 < default <= max');
          return { defaultSeconds, maxSeconds };
        } catch (err) {
          ctx.addIssue({ code: 'custom', message: (err as Error).message });
          return z.NEVER;
        }
      })
      .meta({ description: `default,max lifetime of ${KIND_PLURALS[kind]}` }),
  ]),
);

export function ttlPolicyOf(env: Record<string, unknown>): TtlPolicy {
  return Object.fromEntries(KINDS.map((k) => [k, env[ttlVar(k)]])) as TtlPolicy;
}

/** write-admission's idempotency window, snapshots and memory bound, read the same way by the embedded runtime and the service. */
export const admissionEnvShape = {
  MEMORY_ADMISSION_SNAPSHOT_INTERVAL: duration('5s', true).meta({
    description: 'how often write-admission stores its changed subject states and checkpoints (a restart folds about this much of the log; see [pipeline.md](pipeline.md#write-admission-at-start))',
  }),
  MEMORY_ADMISSION_MEMORY_ENTRIES: integer(500_000, 1_000, 1_000_000_000).meta({
    description: 'about how many records, idempotency slots and deferred events write-admission keeps in memory; the other subjects are loaded from their snapshots when a command needs them',
  }),
  MEMORY_IDEMPOTENCY_WINDOW: duration('24h').meta({ description: 'how long an idempotency key returns its first result' }),
};
const AdmissionEnv = z.object(admissionEnvShape);

export function admissionSettingsOf(e: z.infer<typeof AdmissionEnv>) {
  return { snapshotIntervalMs: e.MEMORY_ADMISSION_SNAPSHOT_INTERVAL, maxEntries: e.MEMORY_ADMISSION_MEMORY_ENTRIES };
}

/** write-admission's environment (main.ts); `pnpm docs:config` renders it into docs/distributed.md. */
export const WriteAdmissionEnv = DistributedEnv.extend({
  ...ttlShape, ...admissionEnvShape, ...WithMasterKeys.shape, ...WithRedis.shape,
});
