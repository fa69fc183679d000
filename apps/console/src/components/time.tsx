import { formatTime } from '../format.ts';

/** An instant in UTC to the second, with its ISO form for machines (and as a tooltip, to the millisecond). */
export const Time = ({ iso }: { iso: string | undefined | null }) =>
  iso === undefined || iso === null ? <span>—</span> : <time dateTime={iso} title={iso}>{formatTime(iso)}</time>;
