/**
 * The state store's key layout (design §4): since keys are written by one injective encoding
 * (@gm/ids `keyOf`), a key of an id holding `:` or `%`, and every record version's key, reads
 * differently than before. A data directory from before is migrated at start by a replay of its
 * log (the projections are folds of it, replay.ts), once, with a line saying so; then the layout
 * is recorded. Keys outside the projections (jobs, receipts, command outcomes) of ids holding `:`
 * or `%` are not rewritten: docs/architecture.md says what that leaves.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Clock } from '@gm/contracts';
import type { Logger } from '@gm/observability';
import { createSqliteKeyValueStore } from '@gm/state-store';
import { ownerOnlyFile } from './data-dir-modes.ts';
import { replayDataDir } from './replay.ts';
import type { MasterKeyEnv } from './stores.ts';

/** The layout this version writes. */
export const KEY_LAYOUT = '2';
const LAYOUT_KEY = 'gm:key-layout';

async function recordedLayout(dataDir: string, write?: string): Promise<string | null> {
  const kv = createSqliteKeyValueStore({ file: ownerOnlyFile(path.join(dataDir, 'state.db')) });
  try {
    if (write !== undefined) await kv.set(LAYOUT_KEY, write);
    return await kv.get(LAYOUT_KEY);
  } finally {
    await kv.close();
  }
}

/** Before the stores open (the directory locked by the caller): migrates an older layout by a replay. */
export async function ensureKeyLayout(dataDir: string, partitions: number, clock: Clock, masterKeyEnv: MasterKeyEnv, log: Logger): Promise<void> {
  const hadLog = existsSync(path.join(dataDir, 'bus.db'));
  if ((await recordedLayout(dataDir)) === KEY_LAYOUT) return;
  if (hadLog) {
    log.info({ layout: KEY_LAYOUT }, 'migrating the state store to its injective key layout: replaying the log');
    const report = await replayDataDir(dataDir, partitions, (events) => log.info({ events }, 'key layout migration: events replayed'), clock, masterKeyEnv, { locked: true });
    log.info({ events: report.events, policyChanges: report.policyChanges }, 'key layout migrated');
  }
  await recordedLayout(dataDir, KEY_LAYOUT);
}
