import { DeletionJob } from '@gm/contracts';
import type { KeyValueStore, KvWrite } from '../port.ts';
import { partsOf } from '@gm/ids';
import { memberOf, partsOfMember, type KeySpace } from './keys.ts';

/** Index slices a listing reads before it answers what it has (with a cursor to go on). */
const LIST_SLICE = 200;
const LIST_SLICES = 10;

/** Deletion job state (§8.1). Open jobs are indexed so a restarted orchestrator resumes them. */
export class DeletionJobs {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}

  /** The job and its indexes in one round trip (every write is idempotent: a retry repeats it whole). */
  async put(job: DeletionJob): Promise<void> {
    const member = memberOf(job.tenant, job.jobId);
    const finished = job.status === 'verified' || job.status === 'failed';
    await this.kv.pipeline([
      { op: 'set', key: this.keys.job(job.tenant, job.jobId), value: JSON.stringify(job) },
      { op: 'set', key: this.keys.jobIndex(job.jobId), value: job.tenant },
      { op: 'zadd', key: this.keys.jobsOf(job.tenant), score: Date.parse(job.requestedAt), member: job.jobId },
      { op: 'zadd', key: this.keys.jobsRequestedBy(job.tenant, job.requestedBy.principalId), score: Date.parse(job.requestedAt), member: job.jobId },
      finished ? { op: 'srem', key: this.keys.openJobs(), members: [member] } : { op: 'sadd', key: this.keys.openJobs(), members: [member] },
      ...(job.legalHold === undefined ? [] : [{ op: 'sadd' as const, key: this.keys.jobsHeldBy(job.tenant, job.legalHold.holdId), members: [job.jobId] }]),
    ]);
  }

  /**
   * A tenant's jobs requested at or after `sinceMs` that `keep` accepts, oldest first (or newest
   * first): at most `limit`, and where to go on (`after`: the last job looked at, its request
   * time and id). Reads the index in slices, so a filter that keeps few jobs still answers in
   * bounded steps. With `requestedBy`, only that principal's jobs are read: a requester's page and
   * cursor then depend on nothing it may not see (whether a page ends, or where, would otherwise
   * tell when others requested deletions).
   */
  async list(
    tenantId: string,
    options: {
      sinceMs: number; order?: 'oldest' | 'newest'; requestedBy?: string; after?: { ms: number; jobId: string }; limit: number; keep: (job: DeletionJob) => boolean;
    },
  ): Promise<{ jobs: DeletionJob[]; next?: { ms: number; jobId: string } }> {
    const newest = options.order === 'newest';
    const index = options.requestedBy === undefined ? this.keys.jobsOf(tenantId) : this.keys.jobsRequestedBy(tenantId, options.requestedBy);
    const read = (from: number) => newest
      ? this.kv.zrevrangeByScore(index, from, options.sinceMs, LIST_SLICE)
      : this.kv.zrangeByScore(index, from, Number.MAX_SAFE_INTEGER, LIST_SLICE);
    // Past the last job answered, in the listing's direction (time, then id).
    const beyond = (m: { score: number; member: string }, at: { ms: number; jobId: string }) => newest
      ? m.score < at.ms || (m.score === at.ms && m.member < at.jobId)
      : m.score > at.ms || (m.score === at.ms && m.member > at.jobId);
    const jobs: DeletionJob[] = [];
    let from = options.after?.ms ?? (newest ? Number.MAX_SAFE_INTEGER : options.sinceMs);
    let skipThrough = options.after;
    for (let slices = 0; slices < LIST_SLICES; slices += 1) {
      const slice = await read(from);
      // Members of the score the last page ended on, up to its job, were answered already.
      const fresh = slice.filter((m) => skipThrough === undefined || beyond(m, skipThrough));
      const raws = await this.kv.mget(fresh.map((m) => this.keys.job(tenantId, m.member)));
      for (const [i, raw] of raws.entries()) {
        const member = fresh[i];
        if (raw === null || member === undefined) continue;
        const job = DeletionJob.parse(JSON.parse(raw));
        if (options.keep(job)) jobs.push(job);
        if (jobs.length === options.limit) return { jobs, next: { ms: member.score, jobId: member.member } };
      }
      const last = slice.at(-1);
      if (slice.length < LIST_SLICE || last === undefined) return { jobs };
      // Known limit: a page boundary inside more than a slice of jobs requested in the same
      // millisecond cannot move past them (the index reads by time, then id, from the edge of
      // that millisecond); it takes over 200 deletions requested in one millisecond.
      from = last.score;
      skipThrough = { ms: last.score, jobId: last.member };
    }
    // Enough read for one answer: the caller goes on from the last job looked at.
    return { jobs, ...(skipThrough ? { next: skipThrough } : {}) };
  }

  /** The jobs that kept content for this hold and were not released from it yet. */
  async heldBy(tenantId: string, holdId: string): Promise<DeletionJob[]> {
    const ids = (await this.kv.smembers(this.keys.jobsHeldBy(tenantId, holdId))).sort();
    const raws = await this.kv.mget(ids.map((jobId) => this.keys.job(tenantId, jobId)));
    return raws.flatMap((raw) => (raw === null ? [] : [DeletionJob.parse(JSON.parse(raw))]));
  }

  /** The job no longer waits on this hold (its release was handled). */
  async releasedFrom(tenantId: string, holdId: string, jobId: string): Promise<void> {
    await this.kv.srem(this.keys.jobsHeldBy(tenantId, holdId), [jobId]);
  }

  async get(tenantId: string, jobId: string): Promise<DeletionJob | null> {
    const raw = await this.kv.get(this.keys.job(tenantId, jobId));
    return raw === null ? null : DeletionJob.parse(JSON.parse(raw));
  }

  async open(): Promise<DeletionJob[]> {
    const jobs: DeletionJob[] = [];
    for (const member of await this.kv.smembers(this.keys.openJobs())) {
      const [tenant, jobId] = partsOfMember(member);
      const job = tenant && jobId ? await this.get(tenant, jobId) : null;
      if (job) jobs.push(job);
    }
    return jobs;
  }
}

/** Per-tenant policy revision (§6.6). Every policy change bumps it. */
export class PolicyRevisions {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}
  async current(tenantId: string): Promise<number> {
    const raw = await this.kv.get(this.keys.policyRevision(tenantId));
    return raw === null ? 0 : Number(raw);
  }
  bump = (tenantId: string) => this.kv.incr(this.keys.policyRevision(tenantId));
}

/**
 * Revoked capability ids, agents and delegated agents (§6.1, §7), checked on every request.
 * Written only by the policy projector, from policy.changes.
 */
export class Revocations {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}
  /** Lives until the capability's own expiry: afterwards the token is refused anyway. */
  revokeCapability = async (jti: string, untilMs: number, nowMs: number) => {
    if (untilMs <= nowMs) return;
    await this.kv.set(this.keys.revokedCapability(jti), '1', { ttlMs: untilMs - nowMs });
  };
  revokeAgent = async (tenant: string, agentId: string) => {
    await this.kv.set(this.keys.revokedAgent(tenant, agentId), '1');
  };
  /** The agent may no longer act for this principal (its delegation was revoked). */
  revokeDelegate = async (tenant: string, agentId: string, principalId: string) => {
    await this.kv.set(this.keys.revokedDelegate(tenant, agentId, principalId), '1');
  };
  restoreDelegate = async (tenant: string, agentId: string, principalId: string) => {
    await this.kv.del([this.keys.revokedDelegate(tenant, agentId, principalId)]);
  };
  /** `principalId`: the capability's delegated principal; an agent acting for itself is no delegate. */
  async isRevoked(tenant: string, agentId: string, jti: string, principalId?: string): Promise<boolean> {
    return (await this.kv.exists(this.keysOf(tenant, agentId, jti, principalId))) > 0;
  }
  /** The keys whose presence revokes this capability. */
  keysOf(tenant: string, agentId: string, jti: string, principalId?: string): string[] {
    const keys = [this.keys.revokedCapability(jti), this.keys.revokedAgent(tenant, agentId)];
    if (principalId !== undefined && principalId !== agentId) keys.push(this.keys.revokedDelegate(tenant, agentId, principalId));
    return keys;
  }
  /** Live revoked capability ids (they vanish with the capability's expiry), sorted. */
  async revokedCapabilities(): Promise<string[]> {
    const prefix = this.keys.revokedCapabilities();
    return (await this.kv.keys(prefix)).map((k) => partsOf(k.slice(prefix.length))[0] ?? '');
  }
}

/**
 * A per-tenant counter bumped by the projector on every record change. Retrieval cache keys
 * include it, so no cached result outlives a write, promotion or deletion.
 */
export class DataGenerations {
  constructor(private readonly kv: KeyValueStore, private readonly keys: KeySpace) {}
  async current(tenantId: string): Promise<number> {
    const raw = await this.kv.get(this.keys.dataGeneration(tenantId));
    return raw === null ? 0 : Number(raw);
  }
  bump = (tenantId: string) => this.kv.incr(this.keys.dataGeneration(tenantId));
  bumpWrite = (tenantId: string): KvWrite => ({ op: 'incr', key: this.keys.dataGeneration(tenantId) });
}
