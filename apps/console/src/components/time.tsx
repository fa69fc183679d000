import { formatTime } from '../format.ts';

/** An instant, readable, with its ISO form for machines. */
export const Time = ({ iso }: { iso: string | undefined | null }) =>
  iso === undefined || iso === null ? <span>—</span> : <time dateTime={iso}>{formatTime(iso)}</time>;
