import { describe, expect, it } from 'vitest';
import { ConsistencyTokens, mergePoints, type ConsistencyPoint } from './consistency-token.ts';

const SECRET = 'gmi_an-issuer-credential-of-this-deployment';
const point: ConsistencyPoint = { tenant: 'acme', events: new Map([[0, 41], [3, 7]]), commands: new Map([[2, 19]]) };
const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
    return undefined;
  } catch (err) {
    return (err as { code?: string }).code;
  }
};

describe('consistency tokens', () => {
  const tokens = new ConsistencyTokens(SECRET);

  it('names the same positions it was issued with, for the same tenant', () => {
    expect(tokens.verify(tokens.issue(point), 'acme')).toEqual(point);
    // Another broker instance of the deployment (the same credential) reads it too.
    expect(new ConsistencyTokens(SECRET).verify(tokens.issue(point), 'acme')).toEqual(point);
  });

  it('refuses a token of another deployment, an altered one, another tenant\'s and garbage', () => {
    const token = tokens.issue(point);
    const [prefix, payload, mac] = token.split('.') as [string, string, string];
    const forged = Buffer.from(JSON.stringify({ t: 'acme', e: [[0, 1_000_000]], c: [] })).toString('base64url');
    for (const [what, candidate, tenant] of [
      ['another deployment', new ConsistencyTokens('gmi_someone-elses-credential-entirely').issue(point), 'acme'],
      ['an altered payload', `${prefix}.${forged}.${mac}`, 'acme'],
      ['an altered mac', `${prefix}.${payload}.${mac.slice(0, -2)}AA`, 'acme'],
      ['another tenant', token, 'globex'],
      ['garbage', 'not-a-token', 'acme'],
      ['an extra part', `${token}.x`, 'acme'],
      ['empty', '', 'acme'],
    ] as const) {
      expect(codeOf(() => tokens.verify(candidate, tenant)), what).toBe('MEM_INVALID_CONSISTENCY_TOKEN');
    }
  });

  it('carries only partitions and offsets', () => {
    const payload = tokens.issue(point).split('.')[1] ?? '';
    expect(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))).toEqual({ t: 'acme', e: [[0, 41], [3, 7]], c: [[2, 19]] });
  });

  it('merges two points into the furthest offset of every partition', () => {
    const later: ConsistencyPoint = { tenant: 'acme', events: new Map([[0, 40], [1, 5]]), commands: new Map([[2, 25]]) };
    expect(mergePoints(point, later)).toEqual({
      tenant: 'acme', events: new Map([[0, 41], [3, 7], [1, 5]]), commands: new Map([[2, 25]]),
    });
  });
});
