import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOPICS, type OpsOverview } from '@gm/contracts';
import { memory, startTestRuntime, type EmbeddedTestRuntime } from './harness.ts';

/**
 * GET /v1/ops/overview on the embedded runtime (docs/console.md): the lag of every consumer group the
 * runtime runs, from its metrics, and the writes it counted; for administrators only.
 */
describe('the operations overview', () => {
  let rt: EmbeddedTestRuntime;
  let admin: string;
  let writer: string;

  beforeAll(async () => {
    rt = await startTestRuntime();
    admin = await rt.issue({ agentId: 'sre-desk', principal: { id: 'sam', kind: 'person' }, scopes: [{ kind: 'tenant', id: 'acme' }], actions: ['admin'] });
    writer = await rt.issue({ agentId: 'support-bot', principal: { id: 'alice', kind: 'person' } });
    for (const n of [1, 2, 3]) {
      expect((await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: `ops-${n}`, content: `Customer ${n} pays by card` }) })).status).toBe(201);
    }
  });
  afterAll(async () => rt.close());

  it('shows each consumer group\'s lag per partition, the writes counted and the dead-letter topics', async () => {
    const res = await rt.api<OpsOverview>('GET', '/v1/ops/overview', { token: admin });
    expect(res.status).toBe(200);
    const overview = res.body;
    const groups = overview.consumers.map((c) => `${c.group} ${c.topic}`);
    for (const expected of [`write-admission ${TOPICS.commands}`, `projector ${TOPICS.events}`, `index-builder ${TOPICS.events}`, `receipt-verifier ${TOPICS.deletionTasks}`, `policy-projector ${TOPICS.policyChanges}`]) {
      expect(groups).toContain(expected);
    }
    // The embedded runtime's 4 partitions, each with its lag (the synchronous writes were folded before they answered).
    const admission = overview.consumers.find((c) => c.group === 'write-admission')!;
    expect(admission.partitions.map((p) => p.partition)).toEqual([0, 1, 2, 3]);
    expect(admission.lag).toBe(admission.partitions.reduce((sum, p) => sum + p.lag, 0));
    expect(overview.counters.writes).toBe(3);
    expect(overview.deadLetters.map((d) => d.topic)).toContain(TOPICS.commands);
    expect(overview.deadLetters.every((d) => d.parked === 0)).toBe(true);
    expect(overview.sources).toEqual([{ source: 'local', ok: true }]);
    expect(overview.history.at(-1)?.at).toBe(overview.at);
    // Ids and counts only: no record id, no content.
    expect(res.text).not.toContain('ops-1');
    expect(res.text).not.toContain('pays by card');
  });

  it('exports what the alert rules watch: readiness, API responses by route pattern and status, policy changes timed to their apply', async () => {
    // A read of a record id that does not exist: its URL must not become a label.
    expect((await rt.api('GET', '/v1/memories/no-such-record-4711', { token: writer })).status).toBe(404);
    const text = String((await rt.api('GET', '/metrics')).body);
    expect(text).toMatch(/^gm_ready 1$/m);
    expect(text).toMatch(/^gm_http_responses_total\{route="\/v1\/memories",status="201"\} 3$/m);
    expect(text).toMatch(/^gm_http_responses_total\{route="\/v1\/memories\/:id",status="404"\} 1$/m);
    expect(text).not.toContain('no-such-record-4711');
    // The capabilities above were granted roles first: policy changes, each applied before its answer.
    const applied = /^gm_policy_change_applied_seconds_count\{outcome="applied"\} (\d+)$/m.exec(text);
    expect(Number(applied?.[1])).toBeGreaterThan(0);
    expect(text).toMatch(/^gm_policy_change_applied_seconds_count\{outcome="timeout"\} 0$/m);
    expect(text).toMatch(/^gm_receipt_signing_failures_total 0$/m);
    // Counted from 0 before anything happened: an alert on their increase sees the first one.
    expect(text).toMatch(/^gm_dead_letters_total\{topic="memory\.events"\} 0$/m);
    expect(text).toMatch(/^gm_deletion_alerts_total\{reason="deadline"\} 0$/m);
    expect(text).toMatch(/^gm_deletion_alerts_total\{reason="target_failed"\} 0$/m);
  });

  it('is refused to a capability without admin, and to an admin capability whose principal administers nothing', async () => {
    const noAdmin = await rt.api('GET', '/v1/ops/overview', { token: writer });
    expect(noAdmin.status).toBe(403);
    expect(noAdmin.body.code).toBe('CAP_ACTION_DENIED');
    const ungranted = await rt.issue({ agentId: 'pretender', principal: { id: 'mallory', kind: 'person' }, scopes: [{ kind: 'project', id: 'maple' }, { kind: 'tenant', id: 'acme' }], actions: ['admin'] }, { grants: false });
    const refused = await rt.api('GET', '/v1/ops/overview', { token: ungranted });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('CAP_SCOPE_DENIED');
  });

  it('is only for the operating tenants\' administrators when MEMORY_OPS_TENANTS names them', async () => {
    const hosted = await startTestRuntime({ MEMORY_OPS_TENANTS: 'ops-team' });
    try {
      const tenantAdmin = await hosted.issue({ agentId: 'acme-admin', principal: { id: 'ann', kind: 'person' }, scopes: [{ kind: 'tenant', id: 'acme' }], actions: ['admin'] });
      const refused = await hosted.api('GET', '/v1/ops/overview', { token: tenantAdmin });
      expect(refused.status).toBe(403);
      expect(refused.body.code).toBe('CAP_SCOPE_DENIED');
      const operator = await hosted.issue({
        tenant: 'ops-team', agentId: 'sre-desk', principal: { id: 'sam', kind: 'person' }, actions: ['admin'], scopes: [{ kind: 'tenant', id: 'ops-team' }],
      });
      expect((await hosted.api('GET', '/v1/ops/overview', { token: operator })).status).toBe(200);
    } finally {
      await hosted.close();
    }
  });
});
