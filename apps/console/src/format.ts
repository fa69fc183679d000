/** Times as the console shows them: the ISO instant, readable, in the browser's zone. */
export function formatTime(iso: string | undefined | null): string {
  if (iso === undefined || iso === null) return '—';
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? iso : new Date(ms).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

export const formatEpochSeconds = (seconds: number): string => formatTime(new Date(seconds * 1000).toISOString());

export const formatNumber = (n: number): string => (Number.isFinite(n) ? n.toLocaleString(undefined, { maximumFractionDigits: 2 }) : String(n));
