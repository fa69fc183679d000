/**
 * The durable stores of a data directory. Each thread of the embedded runtime opens its own
 * connections to the same files (SQLite in WAL mode serialises their writes); only the first
 * opener of a start re-wraps keys under a new master key (`rotate`).
 */
import path from 'node:path';
import { createSqliteBus, memoryTopicSpecs, type Bus } from '@gm/bus';
import type { Clock } from '@gm/contracts';
import { createSqliteSearchIndex, createSqliteSummaryStore, createSqliteVectorIndex, type SearchIndex, type SummaryStore, type VectorIndex } from '@gm/search-index';
import { StateStore, createSqliteKeyValueStore } from '@gm/state-store';
import { createSqliteKeyStore, openContentCrypto, type ContentCrypto, type KeyStore } from '@gm/crypto';
import type { RuntimeConfig } from './config.ts';
import { ownerOnly, ownerOnlyFile } from './data-dir-modes.ts';
import { KEY_STORE_FILE_NAME, loadOrCreateMasterKeys } from './master-keys.ts';

/** Master key settings as the environment names them (see master-keys.ts). */
export type MasterKeyEnv = { MEMORY_MASTER_KEY_FILE?: string; MEMORY_MASTER_KEY?: string };

export const masterKeyEnvOf = (config: Pick<RuntimeConfig, 'masterKeyFile' | 'masterKey'>): MasterKeyEnv => ({
  ...(config.masterKeyFile === undefined ? {} : { MEMORY_MASTER_KEY_FILE: config.masterKeyFile }),
  ...(config.masterKey === undefined ? {} : { MEMORY_MASTER_KEY: config.masterKey }),
});

/** The durable stores of a data directory: the log (bus), the keys, the index and the state. */
export interface Stores {
  /** The log as stored: content on memory.commands / memory.events is sealed here. */
  bus: Bus;
  /** The key store (keys.db) and the keyring; `crypto.view(bus, role)` is a service's view of the log. */
  keyStore: KeyStore;
  crypto: ContentCrypto;
  /** Where the master keys came from (a file path or MEMORY_MASTER_KEY), for the start banner. */
  masterKeySource: string;
  index: SearchIndex;
  /** One embedding per active record (vectors.db); empty while semantic retrieval is off. */
  vectors: VectorIndex;
  summaries: SummaryStore;
  state: StateStore;
  close(): Promise<void>;
}

/** Who opens: the first opener re-wraps old KEKs; each opener seals with transit keys of its own id. */
export interface StoreOpener {
  instanceId: string;
  rotate: boolean;
  /** See RuntimeOptions.secureErasure (default true). */
  secureErasure?: boolean;
}

export async function openStores(
  dataDir: string, partitions: number, clock: Clock, masterKeyEnv: MasterKeyEnv = {},
  opener: StoreOpener = { instanceId: 'embedded', rotate: true },
): Promise<Stores> {
  const epochMs = () => clock.now().getTime();
  ownerOnly(dataDir);
  const file = (name: string) => ownerOnlyFile(path.join(dataDir, name));
  const secureErasure = opener.secureErasure ?? true;
  // Keys and master keys first: a lost or wrong master key stops the start before the log is read.
  const keyStore = createSqliteKeyStore({ file: file(KEY_STORE_FILE_NAME), synchronous: 'NORMAL' });
  let crypto: ContentCrypto;
  let masterKeySource: string;
  try {
    const loaded = loadOrCreateMasterKeys(dataDir, masterKeyEnv, (await keyStore.all()).length > 0);
    masterKeySource = loaded.source;
    // rotate: KEKs still wrapped by an older master key are re-wrapped with the active one.
    crypto = await openContentCrypto({ masterKeys: loaded.masterKeys, store: keyStore, rotate: opener.rotate, instanceId: opener.instanceId, clock: epochMs });
  } catch (err) {
    await keyStore.close();
    throw err;
  }
  const bus = createSqliteBus({ file: file('bus.db'), defaultPartitions: partitions });
  // The key → partition map depends on the count: ensureTopics refuses another count for an
  // existing topic (PartitionCountMismatchError) rather than remap subjects.
  try {
    await bus.ensureTopics(memoryTopicSpecs(partitions));
  } catch (err) {
    await bus.close();
    await keyStore.close();
    crypto.close();
    throw err;
  }
  // Secure erasure (design §8.4): deleted content leaves no bytes in these files.
  const index = createSqliteSearchIndex({ file: file('index.db'), secureErasure });
  const vectors = createSqliteVectorIndex({ file: file('vectors.db'), secureErasure });
  const summaries = createSqliteSummaryStore({ file: file('summaries.db'), secureErasure });
  const kv = createSqliteKeyValueStore({ file: file('state.db'), now: () => clock.now().getTime(), secureErasure });
  const state = new StateStore(kv, 'gm:', () => clock.now().getTime());
  // The policy projection and its log share this data directory and fail together: the state
  // cannot be emptied under a running log as Redis can (design §4). `memctl replay` clears and
  // marks it again as it folds.
  await state.policyProjection.mark();
  return {
    bus, keyStore, crypto, masterKeySource, index, vectors, summaries, state,
    close: async () => {
      crypto.close();
      await keyStore.close();
      await bus.close();
      await index.close();
      await vectors.close();
      await summaries.close();
      await kv.close();
    },
  };
}

