import type { SecretKey } from '../envelope.ts';
import { CryptoError } from '../errors.ts';
import type { Keyring } from '../keyring.ts';

/*
 * Commands carry content from the API to write-admission before any subject key may exist:
 * only write-admission creates subject keys (it alone owns a subject's partition, and the key
 * store has no compare-and-set). So WriteMemory content is sealed with a transit key instead:
 * one per sending instance and UTC hour, id `tk:<instance>:<yyyymmddhh>`. Only the instance its
 * id names ever creates it, so nothing races. Once its hour (plus a grace period) is over and
 * write-admission has consumed everything sent so far, the sweeper destroys it: the command
 * copies on memory.commands then become unreadable too, within about two hours of the write.
 */
const TRANSIT_PREFIX = 'tk:';
const INSTANCE = /^[A-Za-z0-9._-]{1,100}$/;
const HOUR_MS = 60 * 60 * 1000;

const hourOf = (epochMs: number): string => new Date(epochMs).toISOString().slice(0, 13).replace(/[-T]/g, '');

export function transitKeyId(instanceId: string, epochMs: number): string {
  if (!INSTANCE.test(instanceId)) throw new CryptoError('MASTER_KEY_CONFIG', `instance id "${instanceId}" must match ${INSTANCE}`);
  return `${TRANSIT_PREFIX}${instanceId}:${hourOf(epochMs)}`;
}

export const isTransitKeyId = (kid: string): boolean => kid.startsWith(TRANSIT_PREFIX);

/** When the hour a transit key seals ends (epoch ms); undefined for an id that is not one. */
export function transitKeyEndsAt(kid: string): number | undefined {
  const hour = /:(\d{4})(\d{2})(\d{2})(\d{2})$/.exec(kid);
  if (!isTransitKeyId(kid) || hour === null) return undefined;
  const [, y, m, d, h] = hour;
  return Date.parse(`${y}-${m}-${d}T${h}:00:00.000Z`) + HOUR_MS;
}

/** The transit keys of one sending instance: the current hour's for sealing, any for opening. */
export class TransitKeys {
  constructor(
    private readonly keyring: Keyring,
    private readonly instanceId: string,
    private readonly clock: () => number,
  ) {}

  /** The key this instance seals commands with now, created at the first command of the hour. */
  active(): Promise<SecretKey> {
    return this.keyring.transitKey(transitKeyId(this.instanceId, this.clock()), true);
  }

  /** The transit key an envelope names: KEY_DESTROYED once swept, KEY_MISSING if never written. */
  byId(kid: string): Promise<SecretKey> {
    if (!isTransitKeyId(kid)) return Promise.reject(new CryptoError('AUTH_FAILED', `${kid} is not a transit key id`));
    return this.keyring.transitKey(kid, false);
  }
}

export interface TransitSweepOptions {
  keyring: Keyring;
  /** Epoch-ms clock. */
  clock: () => number;
  /**
   * Whether every command sent so far was consumed by write-admission (its committed offsets
   * reached the end offsets read now). A key is destroyed only then: no command sealed with it
   * can still be waiting.
   */
  consumedAll: () => Promise<boolean>;
  /** How long after its hour ended a key is kept, for clock skew and late sends (default 1 h). */
  graceMs?: number;
}

/** Destroys the transit keys whose hour and grace are over; returns how many. */
export async function sweepTransitKeys(options: TransitSweepOptions): Promise<number> {
  const now = options.clock();
  const grace = options.graceMs ?? HOUR_MS;
  const due = (await options.keyring.transitKeyIds()).filter((kid) => (transitKeyEndsAt(kid) ?? Infinity) + grace <= now);
  if (due.length === 0 || !(await options.consumedAll())) return 0;
  for (const kid of due) await options.keyring.destroyKey(kid);
  return due.length;
}
