/**
 * Where the gateway answers (design §4.1, docs/ingest.md): each tenant's results go to a topic of
 * its own, which Kafka ACLs open to that tenant's producers alone, and each result names the
 * tenant and the principal whose capability verified, so a collector takes only its own.
 */
import { ingestResultsTopicSpec, isPartitionCountMismatch, type Bus, type OutgoingMessage } from '@gm/bus';
import { ingestResultsTopic, type CapabilityClaims, type GovernedMemoryError, type IngestResult } from '@gm/contracts';

/**
 * Creates a tenant's results topic before the gateway sends anything its results depend on: the
 * gateway's own rejection, or the command write-admission will answer (its send finds the topic
 * there). Once per tenant per process; a failure is an outage (the batch is retried) and is
 * asked again.
 */
export class TenantResultTopics {
  private readonly ensured = new Map<string, Promise<void>>();

  constructor(private readonly bus: Pick<Bus, 'ensureTopics'>) {}

  ensure(tenant: string): Promise<void> {
    const known = this.ensured.get(tenant);
    if (known !== undefined) return known;
    const created = this.create(tenant);
    this.ensured.set(tenant, created);
    created.catch(() => this.ensured.delete(tenant));
    return created;
  }

  private async create(tenant: string): Promise<void> {
    try {
      await this.bus.ensureTopics([ingestResultsTopicSpec(tenant)]);
    } catch (err) {
      // An operator gave a busy tenant's topic more partitions: results take any count.
      if (!isPartitionCountMismatch(err)) throw err;
    }
  }
}

/** The gateway's own rejection of a verified writer's request, on its tenant's results topic. */
export function rejection(claims: CapabilityClaims, requestId: string, err: GovernedMemoryError): OutgoingMessage {
  const value: IngestResult = {
    tenant: claims.tenant, principal: claims.act.sub, requestId, outcome: 'rejected', code: err.code, detail: err.message, retriable: err.retriable,
  };
  return { topic: ingestResultsTopic(claims.tenant), key: requestId, value };
}
