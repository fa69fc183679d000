import type { PolicySnapshot, PolicySource } from '@gm/contracts';

/**
 * Reads a tenant's whole policy snapshot only when its policy revision moved. The revision is
 * one cheap read per request, so a change applied anywhere (another broker instance, the
 * policy projector) is seen on the next request; the snapshot itself — every grant and
 * delegation — is not re-read per request. Safe because the projector writes a change's
 * data before it raises the revision: whoever reads revision R reads data at least that new.
 */
export class RevisionCachedPolicySource implements PolicySource {
  private readonly snapshots = new Map<string, PolicySnapshot>();

  constructor(
    private readonly source: PolicySource,
    private readonly revisions: { current(tenant: string): Promise<number> },
  ) {}

  async snapshot(tenant: string): Promise<PolicySnapshot> {
    const revision = await this.revisions.current(tenant);
    const cached = this.snapshots.get(tenant);
    if (cached !== undefined && cached.revision === revision) return cached;
    const fresh = await this.source.snapshot(tenant);
    this.snapshots.set(tenant, fresh);
    return fresh;
  }
}
