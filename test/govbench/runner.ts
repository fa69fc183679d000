import type { GovClient, Reply } from './client.ts';
import type { Asker, Checkpoint, Episode, MemoryWrite, Request, Step } from './model.ts';

/** What one checkpoint came to. Ids and verdicts only: no content, no query. */
export interface CheckpointResult {
  id: string;
  episode: string;
  domain: Checkpoint['domain'];
  category: Checkpoint['category'];
  kind: Checkpoint['kind'];
  situation: string;
  op: Request['op'];
  status: number;
  /** The expected outcome was met in full. */
  passed: boolean;
  /** access/forgetting: a leak target appeared, a denial did not come, a stale packet was valid, or the answer was an existence oracle. */
  violation: boolean;
  /** How many leak targets appeared in the response. */
  leaks: number;
  /** utility: refused (4xx) or answered without the expected items. */
  refused: boolean;
  /** utility: answered with a 4xx. */
  falseDenial: boolean;
  items: number;
  itemsWithProvenance: number;
  jobKey?: string;
}

export interface JobResult { episode: string; jobKey: string; status: string; coversRecords: boolean; ms: number }

export interface RunResult {
  system: string;
  checkpoints: CheckpointResult[];
  /** Revocation convergence: 202 → the first read that denies, ms (null: never within the window). */
  convergenceMs: Array<number | null>;
  jobs: JobResult[];
  /** Setup steps the system refused (a grant, a write): they make its scores meaningless. */
  setupErrors: string[];
  requests: number;
  wallMs: number;
}

export interface RunOptions {
  /** Prefixed to every episode's tenant, so repeated runs against one stack do not collide. */
  tenantPrefix?: string;
  /** How long a deletion job may take to be verified. */
  jobTimeoutMs?: number;
  /**
   * Episodes run this many at a time (each its own tenant). Time is shared: an `advance`
   * step waits until every running episode reached its own, then moves the clock once.
   */
  concurrency?: number;
  /** How long a revocation's convergence read is retried until it denies (default 2 s). */
  convergenceWindowMs?: number;
  onEpisode?: (episode: Episode, done: number, total: number) => void;
}

const CONVERGENCE_WINDOW_MS = 2_000;

/** Runs episodes in order against one system and judges every checkpoint. */
export async function runEpisodes(client: GovClient, episodes: Episode[], options: RunOptions = {}): Promise<RunResult> {
  const started = performance.now();
  const result: RunResult = { system: client.name, checkpoints: [], convergenceMs: [], jobs: [], setupErrors: [], requests: 0, wallMs: 0 };
  const size = Math.max(1, options.concurrency ?? 1);
  let done = 0;
  for (let i = 0; i < episodes.length; i += size) {
    const batch = episodes.slice(i, i + size);
    const clock = new SharedClock(client, batch.length);
    const runs = batch.map((episode) => new EpisodeRun(client, episode, clock, options));
    await Promise.all(runs.map(async (run) => {
      try {
        await run.run();
      } finally {
        clock.leave();
      }
    }));
    // Results in episode order, whatever order the concurrent requests finished in.
    for (const run of runs) {
      run.mergeInto(result);
      done += 1;
      options.onEpisode?.(run.episode, done, episodes.length);
    }
  }
  result.wallMs = performance.now() - started;
  return result;
}

/** One clock for concurrent episodes: it moves when every episode still running asked it to. */
class SharedClock {
  private waiting: Array<() => void> = [];
  private step = 0;
  constructor(private readonly client: GovClient, private running: number) {}

  async advance(ms: number): Promise<void> {
    this.step = Math.max(this.step, ms);
    const released = new Promise<void>((resolve) => this.waiting.push(resolve));
    await this.maybeRelease();
    return released;
  }

  leave(): void {
    this.running -= 1;
    void this.maybeRelease();
  }

  private async maybeRelease(): Promise<void> {
    if (this.waiting.length === 0 || this.waiting.length < this.running) return;
    const waiting = this.waiting;
    this.waiting = [];
    await this.client.advance(this.step);
    this.step = 0;
    for (const resolve of waiting) resolve();
  }
}

class EpisodeRun {
  private readonly tenant: string;
  private readonly result: RunResult;
  private readonly tokens = new Map<string, { token: string; jti: string; issuedAt: number }>();
  private readonly grants = new Map<string, string>();
  private readonly delegations = new Map<string, { id: string; delegator: Asker }>();
  private readonly packets = new Map<string, string>();
  private readonly jobs = new Map<string, string>();
  private admin: string | undefined;

  constructor(private readonly client: GovClient, readonly episode: Episode, private readonly clock: SharedClock, private readonly options: RunOptions) {
    this.tenant = `${options.tenantPrefix ?? ''}${episode.tenant}`;
    this.result = { system: client.name, checkpoints: [], convergenceMs: [], jobs: [], setupErrors: [], requests: 0, wallMs: 0 };
  }

  mergeInto(total: RunResult): void {
    total.checkpoints.push(...this.result.checkpoints);
    total.convergenceMs.push(...this.result.convergenceMs);
    total.jobs.push(...this.result.jobs);
    total.setupErrors.push(...this.result.setupErrors);
    total.requests += this.result.requests;
  }

  async run(): Promise<void> {
    const admin = await this.client.issue(this.tenant, {
      key: 'admin', agentId: 'govbench-admin', principal: 'govbench-root', scopes: this.episode.resources, tenantWide: true, purpose: 'admin', actions: ['admin', 'revoke'],
    });
    this.admin = admin.token;
    // Revoking others' capabilities and agents is tenant-wide administration: a grant on the tenant itself.
    const onTenant = await this.call('POST', '/v1/grants', admin.token, {
      principal: { id: 'govbench-root', kind: 'person' }, resource: { kind: 'tenant', id: this.tenant }, role: 'admin', purposes: ['admin'],
    });
    if (onTenant.status !== 201) return this.setupError('admin grant on the tenant', onTenant);
    // Administration is decided by Cedar: govbench-root administers the episode's resources, each
    // by its first admin grant (the bootstrap, on the issuer's word).
    for (const resource of this.episode.resources) {
      const reply = await this.call('POST', '/v1/grants', admin.token, {
        principal: { id: 'govbench-root', kind: 'person' }, resource, role: 'admin', purposes: ['admin'],
      });
      if (reply.status !== 201) return this.setupError(`admin grant on ${resource.kind}:${resource.id}`, reply);
    }
    for (const step of this.episode.steps) await this.step(step);
  }

  private call(method: 'GET' | 'POST' | 'DELETE', route: string, token: string, body?: unknown): Promise<Reply> {
    this.result.requests += 1;
    return this.client.call(method, route, token, body);
  }

  private setupError(what: string, reply: Reply): void {
    this.result.setupErrors.push(`${this.episode.id}: ${what} → ${reply.status} ${String(reply.body?.code ?? '')}`);
  }

  /** The asker's capability, issued once per episode like an agent's run (re-issued before it expires). */
  private async token(asker: Asker): Promise<{ token: string; jti: string }> {
    const held = this.tokens.get(asker.key);
    if (held && this.client.now() - held.issuedAt < 10 * 60_000) return held;
    const issued = { ...(await this.client.issue(this.tenant, asker)), issuedAt: this.client.now() };
    this.tokens.set(asker.key, issued);
    return issued;
  }

  private async step(step: Step): Promise<void> {
    const admin = this.admin ?? '';
    switch (step.type) {
      case 'grant': {
        const g = step.grant;
        const reply = await this.call('POST', '/v1/grants', admin, {
          principal: { id: g.principal, kind: g.kind }, resource: g.resource, role: g.role, purposes: g.purposes,
          ...(g.restricted ? { restricted: g.restricted } : {}),
          ...(g.notAfterInMs === undefined ? {} : { notAfter: new Date(this.client.now() + g.notAfterInMs).toISOString() }),
        });
        if (reply.status !== 201) return this.setupError(`grant ${g.key}`, reply);
        this.grants.set(g.key, String(reply.body?.grantId));
        return;
      }
      case 'remove_grant':
        return this.revoke(`remove grant ${step.grantKey}`, () => this.call('DELETE', `/v1/grants/${this.grants.get(step.grantKey) ?? 'unknown'}`, admin), step.convergence);
      case 'delegate': {
        const d = step.delegation;
        const { token } = await this.token(d.delegator);
        const reply = await this.call('POST', '/v1/delegations', token, { agentId: d.agentId, resources: d.resources, purposes: d.purposes, actions: d.actions });
        if (reply.status !== 201) return this.setupError(`delegation ${d.key}`, reply);
        this.delegations.set(d.key, { id: String(reply.body?.delegationId), delegator: d.delegator });
        return;
      }
      case 'revoke_delegation': {
        const d = this.delegations.get(step.delegationKey);
        const { token } = d ? await this.token(d.delegator) : { token: admin };
        return this.revoke(`revoke delegation ${step.delegationKey}`, () => this.call('POST', `/v1/delegations/${d?.id ?? 'unknown'}/revoke`, token, {}), step.convergence);
      }
      case 'revoke_capability': {
        const asker = step.convergence?.asker;
        const { jti } = asker ? await this.token(asker) : { jti: 'unknown' };
        return this.revoke('revoke capability', () => this.call('POST', `/v1/capabilities/${jti}/revoke`, admin, {}), step.convergence);
      }
      case 'revoke_agent':
        return this.revoke('revoke agent', () => this.call('POST', `/v1/agents/${step.agentId}/revoke`, admin, {}), step.convergence);
      case 'write': {
        const { token } = await this.token(step.writer);
        const reply = await this.call('POST', '/v1/memories', token, this.writeBody(step.memory));
        if (reply.status !== 201) this.setupError(`write ${step.memory.id}`, reply);
        return;
      }
      case 'delete':
      case 'forget': {
        const { token } = await this.token(step.requester);
        const reply = step.type === 'delete'
          ? await this.call('DELETE', `/v1/memories/${step.recordId}`, token)
          : await this.call('POST', `/v1/subjects/${step.subjectId}/forget`, token, {});
        if (reply.status !== 202) return this.setupError(`${step.type} ${step.jobKey}`, reply);
        this.jobs.set(step.jobKey, String(reply.body?.jobId));
        return;
      }
      case 'await_job':
        return this.awaitJob(step.jobKey, step.requester, step.recordIds);
      case 'advance':
        return this.clock.advance(step.ms);
      case 'checkpoint':
        this.result.checkpoints.push(await this.judge(step.checkpoint));
        return;
      default: {
        const never: never = step;
        throw new Error(`unknown step ${JSON.stringify(never)}`);
      }
    }
  }

  /** A revocation, then its convergence read: judged on the first read, timed until a read denies. */
  private async revoke(what: string, request: () => Promise<Reply>, convergence?: Checkpoint): Promise<void> {
    const reply = await request();
    if (reply.status !== 202) return this.setupError(what, reply);
    if (!convergence) return;
    const t0 = performance.now();
    const first = await this.judge(convergence);
    this.result.checkpoints.push(first);
    let converged = first.violation ? undefined : performance.now() - t0;
    while (converged === undefined && performance.now() - t0 < (this.options.convergenceWindowMs ?? CONVERGENCE_WINDOW_MS)) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      const again = await this.judge(convergence);
      if (!again.violation) converged = performance.now() - t0;
    }
    this.result.convergenceMs.push(converged ?? null);
  }

  private async awaitJob(jobKey: string, requester: Asker, recordIds: string[]): Promise<void> {
    const jobId = this.jobs.get(jobKey);
    const t0 = performance.now();
    const job: JobResult = { episode: this.episode.id, jobKey, status: 'missing', coversRecords: false, ms: 0 };
    if (jobId) {
      const { token } = await this.token(requester);
      const deadline = t0 + (this.options.jobTimeoutMs ?? 30_000);
      for (;;) {
        const reply = await this.call('GET', `/v1/deletion-jobs/${jobId}`, token);
        job.status = reply.status === 200 ? String(reply.body?.status) : `http ${reply.status}`;
        const covered = Array.isArray(reply.body?.recordIds) ? (reply.body.recordIds as unknown[]).map(String) : [];
        job.coversRecords = recordIds.every((id) => covered.includes(id));
        if (job.status === 'verified' || job.status === 'failed' || performance.now() > deadline) break;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }
    job.ms = performance.now() - t0;
    this.result.jobs.push(job);
  }

  private writeBody(m: MemoryWrite): Record<string, unknown> {
    return {
      id: m.id, subjectId: m.subjectId, resource: m.resource, kind: m.kind, trust: m.trust, content: m.content,
      provenance: [{ source: 'user', observedAt: new Date(this.client.now()).toISOString() }],
      ...(m.visibility ? { visibility: m.visibility } : {}),
      ...(m.sensitivity ? { sensitivity: m.sensitivity } : {}),
      ...(m.purposes ? { purposes: m.purposes } : {}),
      ...(m.supersedesId ? { supersedesId: m.supersedesId } : {}),
      ...(m.expiresInMs === undefined ? {} : { expiresAt: new Date(this.client.now() + m.expiresInMs).toISOString() }),
      ...(m.owner ? { owner: m.owner } : {}),
      ...(m.agentIdClaim ? { agentId: m.agentIdClaim } : {}),
      ...(m.tenantIdClaim ? { tenantId: m.tenantIdClaim } : {}),
    };
  }

  private async send(request: Request, token: string): Promise<Reply> {
    switch (request.op) {
      case 'search':
        return this.call('POST', '/v1/search', token, {
          query: request.query, ...(request.subjectId ? { subjectId: request.subjectId } : {}), ...(request.extraBody ?? {}),
        });
      case 'get':
        return this.call('GET', `/v1/memories/${request.recordId}`, token);
      case 'write':
        return this.call('POST', '/v1/memories', token, this.writeBody(request.memory));
      case 'validate':
        return this.call('POST', `/v1/packets/${this.packets.get(request.packetOf) ?? 'none'}/validate`, token, {});
      default: {
        const never: never = request;
        throw new Error(`unknown request ${JSON.stringify(never)}`);
      }
    }
  }

  private async judge(cp: Checkpoint): Promise<CheckpointResult> {
    let { token } = await this.token(cp.asker);
    if (cp.tamper) token = tamper(token, cp.tamper);
    const reply = await this.send(cp.request, token);
    if (cp.keepPacketAs && reply.status === 200 && reply.body?.packetId) this.packets.set(cp.keepPacketAs, String(reply.body.packetId));

    const items = Array.isArray(reply.body?.items) ? (reply.body.items as Array<Record<string, unknown>>) : [];
    const returned = items.map((i) => String(i.recordId ?? i.id ?? ''));
    // A validation names the records the caller already cited: ids there are not a leak.
    const cited = cp.expected.outcome === 'packet_invalid' ? cp.expected.recordIds : [];
    const leaks = cp.leakTargets.filter((t) => !cited.includes(t) && reply.text.includes(t)).length;
    const ok = reply.status >= 200 && reply.status < 300;
    let met: boolean;
    switch (cp.expected.outcome) {
      case 'items':
        met = ok && cp.expected.recordIds.every((id) => returned.includes(id));
        break;
      case 'found':
        met = ok && reply.body?.id === cp.expected.recordId;
        break;
      case 'nothing':
        met = true;
        break;
      case 'denied':
        met = reply.status >= 400;
        break;
      case 'superseded':
        met = ok && reply.body?.id === cp.expected.recordId && reply.body.status === 'superseded' && reply.body.supersededById === cp.expected.by;
        break;
      case 'packet_invalid': {
        const stillValid = reply.status === 200 && (reply.body?.valid === true || items.some((i) => i.valid === true && cited.includes(String(i.recordId))));
        met = !stillValid;
        break;
      }
    }
    let oracle = false;
    if (cp.control) {
      const control = await this.send(cp.control, token);
      oracle = control.status !== reply.status || normalise(control) !== normalise(reply);
    }
    const violation = cp.category !== 'utility' && (leaks > 0 || oracle || (cp.expected.outcome !== 'items' && !met));
    const refused = cp.category === 'utility' && !met;
    return {
      id: cp.id, episode: cp.episode, domain: cp.domain, category: cp.category, kind: cp.kind, situation: cp.situation, op: cp.request.op,
      status: reply.status, passed: met && leaks === 0 && !oracle, violation, leaks,
      refused, falseDenial: cp.category === 'utility' && reply.status >= 400,
      items: items.length, itemsWithProvenance: items.filter((i) => Array.isArray(i.provenanceRefs) && i.provenanceRefs.length > 0).length,
      ...(cp.jobKey ? { jobKey: cp.jobKey } : {}),
    };
  }
}

/** The parts of an answer that may not depend on hidden records: everything but the items and per-request ids. */
function normalise(reply: Reply): string {
  if (!reply.body) return reply.text;
  const { items: _items, packetId: _p, runId: _r, requestId: _q, expiresAt: _e, ...rest } = reply.body;
  return JSON.stringify(rest);
}

/** Edits claims into a signed token without re-signing it (what a forger can do). */
function tamper(token: string, change: NonNullable<Checkpoint['tamper']>): string {
  const [header, payload, signature] = token.split('.');
  const claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
  const edited = { ...claims, ...(change.purpose ? { purpose: change.purpose } : {}), ...(change.scopes ? { scopes: change.scopes } : {}) };
  return `${header}.${Buffer.from(JSON.stringify(edited)).toString('base64url')}.${signature}`;
}
