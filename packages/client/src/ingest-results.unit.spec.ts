import { describe, expect, it } from 'vitest';
import type { IngestResult } from '@gm/contracts';
import { IngestResultCollector, ingestResultsTopicOf } from './ingest-results.ts';

const accepted = (tenant: string, principal: string, requestId: string, id: string): IngestResult => ({
  tenant, principal, requestId, outcome: 'accepted', commandId: `cmd-${id}`, id, version: 1, status: 'active',
});
/** A capability's payload is all the collector reads (unverified, as readCapability says). */
const capabilityOf = (tenant: string, principal: string): string => [
  'e30',
  Buffer.from(JSON.stringify({
    iss: 'gm', aud: 'gm', sub: 'scribe', act: { sub: principal, kind: 'person' }, tenant, run: 'run-1',
    scopes: [{ kind: 'project', id: 'maple' }], purpose: 'support', actions: ['write'], exp: 2, iat: 1, rev: 0, jti: 'jti-1',
  })).toString('base64url'),
  'sig',
].join('.');

describe('IngestResultCollector', () => {
  it('takes only results naming its tenant, principal and requestId: another writer\'s result under the same requestId, first, is not its own', async () => {
    const collector = new IngestResultCollector({ capability: capabilityOf('acme', 'person-ana') }, ['req-1']);
    expect(collector.offer(Buffer.from(JSON.stringify(accepted('acme', 'person-bob', 'req-1', 'bobs'))))).toBeUndefined();
    expect(collector.offer(JSON.stringify(accepted('globex', 'person-ana', 'req-1', 'globex-ana')))).toBeUndefined();
    expect(collector.offer(accepted('acme', 'person-ana', 'req-2', 'other-request'))).toBeUndefined();
    expect(collector.offer('not json')).toBeUndefined();
    expect(collector.offer({ requestId: 'req-1', outcome: 'accepted' })).toBeUndefined();
    const own = accepted('acme', 'person-ana', 'req-1', 'hers');
    expect(collector.offer(JSON.stringify(own))).toEqual(own);
    expect(await collector.done).toEqual(new Map([['req-1', [own]]]));
  });

  it('keeps repeats of its own results, so a caller can see there is one each', () => {
    const collector = new IngestResultCollector({ tenant: 'acme', principal: 'person-ana' }, ['req-1', 'req-2']);
    const first = accepted('acme', 'person-ana', 'req-1', 'hers');
    collector.offer(first);
    collector.offer(first);
    expect(collector.results.get('req-1')).toEqual([first, first]);
    expect(collector.results.has('req-2')).toBe(false);
  });

  it('names the topic of the capability\'s tenant, under the deployment\'s namespace', () => {
    expect(ingestResultsTopicOf({ capability: capabilityOf('acme', 'person-ana') })).toBe('memory.ingest.results.acme');
    expect(ingestResultsTopicOf({ tenant: 'a_b.c', principal: 'p' }, 'prod')).toBe('prod.memory.ingest.results.a__b_dc');
  });
});
