/**
 * Reading the results of Kafka-native ingest (docs/ingest.md#collecting-results): whatever Kafka
 * client a platform reads with, this says which topic holds its results and which of the results
 * there are its own. A requestId is the producer's choice, so another writer may use the same
 * one: a result is a producer's only when it names the producer's tenant, principal and requestId
 * (design §4.1).
 */
import { IngestResult, ingestResultsTopic } from '@gm/contracts';
import { readCapability } from './capability.ts';

/** Whose results to take: a capability's own tenant and principal, or named. */
export type ResultOwner = { capability: string } | { tenant: string; principal: string };

const ownerOf = (owner: ResultOwner): { tenant: string; principal: string } => {
  if (!('capability' in owner)) return owner;
  const claims = readCapability(owner.capability);
  return { tenant: claims.tenant, principal: claims.act.sub };
};

/** The topic with a tenant's results, as the deployment's `MEMORY_NAMESPACE` prefixes it (`''` for none). */
export function ingestResultsTopicOf(owner: ResultOwner, namespace = ''): string {
  const topic = ingestResultsTopic(ownerOf(owner).tenant);
  return namespace === '' ? topic : `${namespace}.${topic}`;
}

/**
 * Takes the message values of a results topic, in any order and with any repeats the reader hands
 * over, and keeps the ones that answer these requests of this owner; everything else is
 * ignored: another principal's result under the same requestId, another request's, a value that
 * is not a result. `done` resolves once every request has a result.
 */
export class IngestResultCollector {
  readonly tenant: string;
  readonly principal: string;
  readonly done: Promise<ReadonlyMap<string, readonly IngestResult[]>>;
  private readonly wanted: ReadonlySet<string>;
  private readonly seen = new Map<string, IngestResult[]>();
  private finish: () => void = () => undefined;

  constructor(owner: ResultOwner, requestIds: Iterable<string>) {
    ({ tenant: this.tenant, principal: this.principal } = ownerOf(owner));
    this.wanted = new Set(requestIds);
    this.done = new Promise((resolve) => {
      this.finish = () => resolve(this.seen);
    });
    if (this.wanted.size === 0) this.finish();
  }

  /** One message value (bytes, text or parsed JSON): its result if it is one of ours, else undefined. */
  offer(value: unknown): IngestResult | undefined {
    const parsed = IngestResult.safeParse(parseValue(value));
    if (!parsed.success) return undefined;
    const result = parsed.data;
    if (result.tenant !== this.tenant || result.principal !== this.principal || !this.wanted.has(result.requestId)) return undefined;
    this.seen.set(result.requestId, [...(this.seen.get(result.requestId) ?? []), result]);
    if (this.seen.size === this.wanted.size) this.finish();
    return result;
  }

  /** Every result taken so far, per requestId, in the order offered (repeats included). */
  get results(): ReadonlyMap<string, readonly IngestResult[]> {
    return this.seen;
  }
}

function parseValue(value: unknown): unknown {
  const text = value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : value;
  if (typeof text !== 'string') return text;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
