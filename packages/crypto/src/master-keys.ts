import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { KEY_BYTES } from './envelope.ts';
import { CryptoError } from './errors.ts';

/** The master keys a service holds: the active one wraps new KEKs, the others stay readable. */
export interface MasterKeys {
  readonly active: string;
  readonly keys: ReadonlyMap<string, Buffer>;
}

export interface MasterKey {
  readonly id: string;
  readonly key: Buffer;
}

const MASTER_KEY_ID = /^[A-Za-z0-9._-]{1,64}$/;

const KeyFile = z
  .object({
    active: z.string(),
    keys: z.record(z.string(), z.string()),
  })
  .strict();

const configError = (message: string, cause?: unknown): CryptoError =>
  new CryptoError('MASTER_KEY_CONFIG', message, cause === undefined ? {} : { cause });

/** 32 bytes from base64 (standard or url alphabet, padding optional); anything else is an error naming the source. */
export function decodeMasterKey(text: string, source: string): Buffer {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) throw configError(`${source}: not base64`);
  const bytes = Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
  if (bytes.length !== KEY_BYTES) {
    throw configError(`${source}: a master key must be ${KEY_BYTES} bytes (base64 of 32 random bytes), got ${bytes.length}`);
  }
  return bytes;
}

/**
 * Reads the master keys from `MEMORY_MASTER_KEY_FILE` (JSON `{active, keys: {id: base64}}`)
 * or `MEMORY_MASTER_KEY` (one base64 key, id `env`). Exactly one must be set: a missing or
 * malformed key is a startup error, never a default.
 */
export function loadMasterKeys(env: Record<string, string | undefined>): MasterKeys {
  const file = env.MEMORY_MASTER_KEY_FILE?.trim() || undefined;
  const single = env.MEMORY_MASTER_KEY?.trim() || undefined;
  if (file !== undefined && single !== undefined) {
    throw configError('set MEMORY_MASTER_KEY_FILE or MEMORY_MASTER_KEY, not both');
  }
  if (single !== undefined) return { active: 'env', keys: new Map([['env', decodeMasterKey(single, 'MEMORY_MASTER_KEY')]]) };
  if (file === undefined) {
    throw configError('no master key: set MEMORY_MASTER_KEY_FILE (JSON {active, keys}) or MEMORY_MASTER_KEY (base64 of 32 bytes)');
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (cause) {
    throw configError(`MEMORY_MASTER_KEY_FILE ${file}: cannot be read`, cause);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    throw configError(`MEMORY_MASTER_KEY_FILE ${file}: not JSON`, cause);
  }
  const parsed = KeyFile.safeParse(json);
  if (!parsed.success) throw configError(`MEMORY_MASTER_KEY_FILE ${file}: expected {"active": id, "keys": {id: base64}}`, parsed.error);
  const keys = new Map<string, Buffer>();
  for (const [id, value] of Object.entries(parsed.data.keys)) {
    if (!MASTER_KEY_ID.test(id)) throw configError(`MEMORY_MASTER_KEY_FILE ${file}: master key id "${id}" must match ${MASTER_KEY_ID}`);
    keys.set(id, decodeMasterKey(value, `MEMORY_MASTER_KEY_FILE ${file}, key "${id}"`));
  }
  return masterKeys(parsed.data.active, keys, `MEMORY_MASTER_KEY_FILE ${file}`);
}

/** Checks that `active` is among `keys`; used by the loader and by tests building keys in memory. */
export function masterKeys(active: string, keys: ReadonlyMap<string, Buffer>, source = 'master keys'): MasterKeys {
  if (!keys.has(active)) throw configError(`${source}: the active master key "${active}" is not among the keys (${[...keys.keys()].join(', ') || 'none'})`);
  for (const [id, key] of keys) {
    if (key.length !== KEY_BYTES) throw configError(`${source}: master key "${id}" must be ${KEY_BYTES} bytes, got ${key.length}`);
  }
  return { active, keys };
}
