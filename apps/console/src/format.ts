/**
 * Times as the console shows them: UTC to the second, `2026-12-06 01:02:03 UTC`, the same for
 * everyone who reads a screenshot or a page over a call, whatever their browser's zone.
 */
export function formatTime(iso: string | undefined | null): string {
  if (iso === undefined || iso === null) return '—';
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  const text = new Date(ms).toISOString();
  return `${text.slice(0, 10)} ${text.slice(11, 19)} UTC`;
}

export const formatEpochSeconds = (seconds: number): string => formatTime(new Date(seconds * 1000).toISOString());

/** How long after a start, for a timeline: `+0 s`, `+0.4 s`, `+12.3 s`, `+2 min 5 s`, `+3 h 4 min`; `−…` before it. */
export function formatOffset(ms: number): string {
  const sign = ms < 0 ? '−' : '+';
  const abs = Math.abs(ms);
  if (abs < 60_000) {
    const seconds = Math.round(abs / 100) / 10;
    return `${sign}${seconds === Math.trunc(seconds) ? seconds.toFixed(0) : seconds.toFixed(1)} s`;
  }
  const totalSeconds = Math.round(abs / 1000);
  if (totalSeconds < 3600) return `${sign}${Math.floor(totalSeconds / 60)} min ${totalSeconds % 60} s`;
  const totalMinutes = Math.floor(totalSeconds / 60);
  if (totalMinutes < 48 * 60) return `${sign}${Math.floor(totalMinutes / 60)} h ${totalMinutes % 60} min`;
  return `${sign}${Math.floor(totalMinutes / 1440)} d ${Math.floor((totalMinutes % 1440) / 60)} h`;
}

export const formatNumber = (n: number): string => (Number.isFinite(n) ? n.toLocaleString(undefined, { maximumFractionDigits: 2 }) : String(n));

const UNITS: ReadonlyArray<[Intl.RelativeTimeFormatUnit, number]> = [['day', 86_400_000], ['hour', 3_600_000], ['minute', 60_000], ['second', 1000]];

/** How far `iso` is from `nowMs`, in the largest whole unit: `in 29 days`, `3 minutes ago`. */
export function formatRelative(iso: string, nowMs: number): string {
  const delta = Date.parse(iso) - nowMs;
  if (Number.isNaN(delta)) return '';
  const [unit, size] = UNITS.find(([, ms]) => Math.abs(delta) >= ms) ?? ['second', 1000];
  return new Intl.RelativeTimeFormat('en', { numeric: 'always' }).format(Math.trunc(delta / size), unit);
}
