import { GovernedMemoryError } from '@gm/contracts';
import type { RankCursor } from './port.ts';

/** Where a ranked page ended, in the summary order: confidence (32-bit), createdAt (epoch ms), recordId. */
export type RankPosition = [confidence: number, createdMs: number, recordId: string];

export const encodeRankCursor = (position: RankPosition): RankCursor => JSON.stringify(position);

/** The position a cursor names; a string that is not one of ours is refused, not read as the start. */
export function decodeRankCursor(cursor: RankCursor): RankPosition {
  let parsed: unknown;
  try {
    parsed = JSON.parse(cursor);
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 3 || typeof parsed[0] !== 'number' || typeof parsed[1] !== 'number' || typeof parsed[2] !== 'string') {
    throw new GovernedMemoryError('MEM_VALIDATION', 'not a cursor of this search index');
  }
  return [parsed[0], parsed[1], parsed[2]];
}
