import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CryptoError, loadMasterKeys, type MasterKeys } from '@gm/crypto';

export const MASTER_KEY_FILE_NAME = 'master-keys.json';
/**
 * The key store is a table (`crypto_keys`) inside the log's own file: a key is written just
 * before the bus commits the event it seals, and that commit's fsync covers both (see
 * SqliteKeyStoreOptions.synchronous). A separate file cost a second fsync per write.
 */
export const KEY_STORE_FILE_NAME = 'bus.db';

/**
 * True when the master key file lies inside the data directory (the default): then whoever gets
 * a copy of the directory — a stolen disk, a backup, a snapshot — gets the key with the
 * ciphertext, and encryption at rest protects nothing against that (docs/encryption.md, "Threat
 * model"). Compared after resolving links, so a symlink into the directory counts as inside.
 */
export function masterKeyBesideData(dataDir: string, source: string): boolean {
  if (source === 'MEMORY_MASTER_KEY') return false;
  const real = (p: string): string => (existsSync(p) ? realpathSync(p) : path.resolve(p));
  const relative = path.relative(real(dataDir), real(source));
  return relative !== '' && !relative.startsWith('..') && !path.isAbsolute(relative);
}

/**
 * The master keys of the embedded runtime: MEMORY_MASTER_KEY_FILE or MEMORY_MASTER_KEY when set;
 * otherwise `<data-dir>/keys/master-keys.json`, generated (0600) at the first start of a data
 * directory without keys (`storeHoldsKeys` false). One that already holds keys but has lost its
 * master key file is a startup error (MASTER_KEY_CONFIG), never a fresh key that would silently
 * orphan the old data.
 */
export function loadOrCreateMasterKeys(
  dataDir: string, env: { MEMORY_MASTER_KEY_FILE?: string; MEMORY_MASTER_KEY?: string }, storeHoldsKeys: boolean,
): {
  masterKeys: MasterKeys;
  source: string;
} {
  if (env.MEMORY_MASTER_KEY_FILE !== undefined || env.MEMORY_MASTER_KEY !== undefined) {
    return { masterKeys: loadMasterKeys(env), source: env.MEMORY_MASTER_KEY_FILE ?? 'MEMORY_MASTER_KEY' };
  }
  const dir = path.join(dataDir, 'keys');
  const file = path.join(dir, MASTER_KEY_FILE_NAME);
  if (!existsSync(file)) {
    if (storeHoldsKeys) {
      throw new CryptoError(
        'MASTER_KEY_CONFIG',
        `${dataDir} holds encryption keys but no master key: ${file} is missing and neither MEMORY_MASTER_KEY_FILE nor MEMORY_MASTER_KEY is set; ` +
          'restore the master key file — without it the sealed content cannot be read',
      );
    }
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const id = `m${new Date().toISOString().slice(0, 10).replace(/-/g, '')}`;
    writeFileSync(file, `${JSON.stringify({ active: id, keys: { [id]: randomBytes(32).toString('base64') } }, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  }
  return { masterKeys: loadMasterKeys({ MEMORY_MASTER_KEY_FILE: file }), source: file };
}
