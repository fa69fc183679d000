import { z } from 'zod';
import type { MemoryKind } from '@gm/contracts';
import { DEFAULT_TTL_POLICY, type TtlPolicy } from '@gm/domain';

/** Environment parsing shared by the embedded runtime and every distributed service. */
const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "250ms", "30s", "15m", "24h", "90d" → milliseconds. */
export function parseDuration(text: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(text.trim());
  if (!match?.[1] || !match[2]) throw new Error(`"${text}" is not a duration like 30s, 15m, 24h or 90d`);
  return Number(match[1]) * (UNITS[match[2]] ?? 1);
}

export const duration = (fallback: string, timer = false) =>
  z
    .string()
    .default(fallback)
    .transform((v, ctx) => {
      try {
        const ms = parseDuration(v);
        // Node timers fire at once past 2^31-1 ms; a zero interval would spin a loop.
        if (ms < 1 || (timer && ms > 2_147_483_647)) throw new Error(`"${v}" must be between 1ms and ${timer ? '24d' : 'any length'}`);
        return ms;
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
        return z.NEVER;
      }
    });

/** Digits only: an empty MEMORY_PORT= must be an error, not port 0 (Number('') === 0). */
export const integer = (fallback: number, min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .default(String(fallback))
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

export const KINDS: MemoryKind[] = ['working_note', 'fact', 'skill', 'preference'];
export const ttlVar = (kind: MemoryKind) => `MEMORY_TTL_${kind.toUpperCase()}`;
const fmt = (s: number) => `${Math.round(s / 86400)}d`;

/** "default,max" per kind, e.g. MEMORY_TTL_FACT=90d,365d. */
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
      }),
  ]),
);


/** The TTL policy out of parsed MEMORY_TTL_* variables. */
export function ttlPolicyOf(env: Record<string, unknown>): TtlPolicy {
  return Object.fromEntries(KINDS.map((k) => [k, env[ttlVar(k)]])) as TtlPolicy;
}

export const LogLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);
