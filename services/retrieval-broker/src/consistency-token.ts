/**
 * Consistency tokens (docs/ingest.md): what a session has written, as positions in the log, so that a
 * later read can wait until the projections have passed them — read-your-writes and monotonic
 * reads per token, without the write having waited.
 *
 * A token is `ct1.<payload>.<mac>`: the payload names the tenant and, per partition, the
 * furthest offset to wait for — on `memory.events` (a write whose events are known) or on
 * `memory.commands` (an asynchronous write, answered before write-admission decided it). The MAC
 * is HMAC-SHA256 under a key derived from the issuer credential, which every broker instance of
 * a deployment shares; a token of another deployment, or edited, fails it. It carries no
 * content, ids or subjects: only partition numbers and offsets.
 */
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { GovernedMemoryError } from '@gm/contracts';

export const CONSISTENCY_TOKEN_HEADER = 'consistency-token';

/** Per partition, the furthest offset a read must wait for. */
export type Positions = ReadonlyMap<number, number>;

export interface ConsistencyPoint {
  tenant: string;
  /** memory.events offsets the projections must have passed. */
  events: Positions;
  /** memory.commands offsets write-admission must have passed (then its events are in the log). */
  commands: Positions;
}

const PREFIX = 'ct1';
/** A token names at most this many positions: a partition count is at most 256 per topic. */
const MAX_POSITIONS = 512;

const invalid = (why: string): GovernedMemoryError =>
  new GovernedMemoryError('MEM_INVALID_CONSISTENCY_TOKEN', `Consistency-Token: ${why}`);

/** Moves a partition's position up to `offset` (never back). */
export function raise(positions: Map<number, number>, partition: number, offset: number): void {
  positions.set(partition, Math.max(offset, positions.get(partition) ?? -1));
}

function furthest(...all: Positions[]): Map<number, number> {
  const merged = new Map<number, number>();
  for (const positions of all) {
    for (const [partition, offset] of positions) raise(merged, partition, offset);
  }
  return merged;
}

/** Both points' positions, the furthest of each partition: a session's token only ever moves forward. */
export function mergePoints(a: ConsistencyPoint, b: ConsistencyPoint): ConsistencyPoint {
  return { tenant: a.tenant, events: furthest(a.events, b.events), commands: furthest(a.commands, b.commands) };
}

const isPosition = (x: unknown): x is [number, number] =>
  Array.isArray(x) && x.length === 2 && x.every((n) => Number.isSafeInteger(n) && (n as number) >= 0);

export class ConsistencyTokens {
  private readonly key: Buffer;

  /** `secret`: the issuer credential, the same on every broker instance of the deployment. */
  constructor(secret: string) {
    this.key = Buffer.from(hkdfSync('sha256', secret, 'governed-memory', 'consistency-token v1', 32));
  }

  issue(point: ConsistencyPoint): string {
    const payload = Buffer.from(JSON.stringify({ t: point.tenant, e: [...point.events], c: [...point.commands] })).toString('base64url');
    return `${PREFIX}.${payload}.${this.mac(payload)}`;
  }

  /** The point a token names, for a read of `tenant`; a malformed, forged or foreign token is refused before any wait. */
  verify(token: string, tenant: string): ConsistencyPoint {
    const [prefix, payload, mac, ...rest] = token.split('.');
    if (prefix !== PREFIX || payload === undefined || mac === undefined || rest.length > 0) throw invalid('not a consistency token');
    const expected = Buffer.from(this.mac(payload));
    const given = Buffer.from(mac);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid('not issued by this deployment, or altered');
    let body: unknown;
    try {
      body = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      throw invalid('not a consistency token');
    }
    const { t, e, c } = (body ?? {}) as { t?: unknown; e?: unknown; c?: unknown };
    if (typeof t !== 'string' || !Array.isArray(e) || !Array.isArray(c) || !e.every(isPosition) || !c.every(isPosition) || e.length + c.length > MAX_POSITIONS) {
      throw invalid('not a consistency token');
    }
    // Another tenant's token says nothing about this tenant's reads: refused like a forged one.
    if (t !== tenant) throw invalid('issued for another tenant');
    return { tenant: t, events: new Map(e), commands: new Map(c) };
  }

  private mac(payload: string): string {
    return createHmac('sha256', this.key).update(`${PREFIX}.${payload}`).digest('base64url');
  }
}
