/** Times as the console shows them: the ISO instant, readable, in the browser's zone. */
export function formatTime(iso: string | undefined | null): string {
  if (iso === undefined || iso === null) return '—';
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? iso : new Date(ms).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

export const formatEpochSeconds = (seconds: number): string => formatTime(new Date(seconds * 1000).toISOString());

export const formatNumber = (n: number): string => (Number.isFinite(n) ? n.toLocaleString(undefined, { maximumFractionDigits: 2 }) : String(n));

/** An instant to the second in UTC, the same for every reviewer: `2026-05-01 12:34:56 UTC`. */
export function formatUtc(iso: string): string {
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? iso : `${new Date(ms).toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

const UNITS: ReadonlyArray<[Intl.RelativeTimeFormatUnit, number]> = [['day', 86_400_000], ['hour', 3_600_000], ['minute', 60_000], ['second', 1000]];

/** How far `iso` is from `nowMs`, in the largest whole unit: `in 29 days`, `3 minutes ago`. */
export function formatRelative(iso: string, nowMs: number): string {
  const delta = Date.parse(iso) - nowMs;
  if (Number.isNaN(delta)) return '';
  const [unit, size] = UNITS.find(([, ms]) => Math.abs(delta) >= ms) ?? ['second', 1000];
  return new Intl.RelativeTimeFormat('en', { numeric: 'always' }).format(Math.trunc(delta / size), unit);
}
