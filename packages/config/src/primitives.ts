import { z } from 'zod';

/**
 * The vocabulary of environment variables, read the same way by the embedded runtime, every
 * distributed service and the MCP server. Each variable carries its documentation in `.meta()`
 * (see env-reference.ts); `pnpm docs:config` renders the tables of docs/configuration.md and
 * docs/distributed.md from it.
 */
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

export const LogLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/** The log level, read the same way by the embedded runtime and every service. */
export const logEnvShape = {
  MEMORY_LOG_LEVEL: LogLevel.default('info').meta({ description: 'pino level (`silent` … `trace`)' }),
};
