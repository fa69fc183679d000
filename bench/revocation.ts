/**
 * Revocation convergence (§7), over HTTP like every other probe: for fresh capabilities that
 * can read a record, revoke each and time (a) the revoke request — produce on policy.changes
 * and wait for the policy projector — and (b) the first read after the 202, which must already
 * be denied. A read that is still allowed aborts the run: that would be a bug, not a number.
 */
import { call, issueCapability, issueToken, tenantAdministrator, type HttpTarget } from './administration.ts';
import { write, writeBody } from './http-probe.ts';
import { progress, summarize, type Summary } from './stats.ts';

export interface RevocationResult {
  /** The revoke request, answered 202 once the policy projector applied it. */
  revoke: Summary;
  /** From the 202 to the answer of the next read (every one denied). */
  convergence: Summary;
}

const PROBE_ID = 'bench-revocation-probe';

export async function measureRevocation(target: HttpTarget, tenant: string, n: number, label: string): Promise<RevocationResult> {
  // issueToken grants the bench agent membership; capabilities for it can then read the probe.
  await write(target, await issueToken(target, tenant), writeBody('revocation probe record', 'subj-revocation', PROBE_ID));
  // Revoking another principal's capability is tenant-wide administration: an admin grant on the tenant.
  const admin = { token: await tenantAdministrator(target, tenant) };
  const revoke: number[] = [];
  const convergence: number[] = [];
  for (let i = 0; i < n; i += 1) {
    const reader = await issueCapability(target, { tenant, agentId: 'bench', actions: ['read'] });
    const before = await call(`${target.url}/v1/memories/${PROBE_ID}`, reader.token, undefined, true);
    if (before.status !== 200) throw new Error(`${label}: the reader cannot read before its revocation (${before.status})`);
    const t0 = performance.now();
    const revoked = await call(`${target.url}/v1/capabilities/${reader.jti}/revoke`, admin.token, {});
    const t1 = performance.now();
    const after = await call(`${target.url}/v1/memories/${PROBE_ID}`, reader.token, undefined, true);
    const t2 = performance.now();
    if (revoked.status !== 202 || after.status !== 401) throw new Error(`${label}: revoke answered ${revoked.status}, the next read ${after.status}`);
    revoke.push(t1 - t0);
    convergence.push(t2 - t1);
  }
  const result = { revoke: summarize(revoke), convergence: summarize(convergence) };
  progress(`${label}: ${n} revocations, 202 → denied read p50 ${result.convergence.p50.toFixed(1)} ms`);
  return result;
}
