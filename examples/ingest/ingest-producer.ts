/**
 * Producing memory writes straight onto Kafka (docs/ingest.md): what a platform's own pipeline
 * does instead of calling POST /v1/memories, on the distributed runtime. Needs kafkajs,
 * node:crypto and the SDK's result collector (@gm/client): the producer's key, and a write
 * capability bound to it, read from the environment (never a command line, which pnpm echoes).
 *
 *   node --import tsx examples/ingest/ingest-producer.ts keygen producer-key.json   # prints the public JWK
 *   # POST /v1/capabilities with "producerKey": <that JWK>, then:
 *   MEMORY_CAPABILITY=<compact JWS> MEMORY_PRODUCER_KEY_FILE=producer-key.json KAFKA_BROKERS=127.0.0.1:19092 \
 *     MEMORY_NAMESPACE=<ns> node --import tsx examples/ingest/ingest-producer.ts [count, default 1]
 *
 * Each request is the body of POST /v1/memories plus a `requestId` of the producer's choosing
 * (docs/schemas/memory.ingest.schema.json); the capability travels in the `capability` header and
 * each message's proof of the key in `capability-proof` (docs/ingest.md#producer-proofs): the key
 * never leaves the producer, so a reader of the topic cannot act as it.
 * Every request gets exactly one result, keyed by its requestId, on its tenant's results topic
 * `memory.ingest.results.<tenant>` (docs/schemas/memory.ingest.results.schema.json). The
 * collector takes only results naming its capability's tenant and principal: anyone may use the
 * same requestId.
 */
import { createHash, createPrivateKey, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { IngestResultCollector, ingestResultsTopicOf } from '@gm/client';
import { CompressionTypes, Kafka, Partitioners, logLevel, type Admin, type Producer } from 'kafkajs';

/** What this example sends: see the JSON Schema for every field. */
export interface IngestRequest {
  requestId: string;
  subjectId: string;
  resource: { kind: string; id: string };
  kind: 'working_note' | 'fact' | 'skill' | 'preference';
  content: string;
  provenance: Array<{ source: 'user' | 'tool' | 'review' | 'import'; observedAt: string; uri?: string; eventId?: string }>;
  trust: 'trusted' | 'untrusted';
  [field: string]: unknown;
}

/** One result per request: accepted with the record, or rejected with the API's problem code; naming whose request it answers. */
export type IngestResult = { tenant: string; principal: string; requestId: string } & (
  | { outcome: 'accepted'; commandId: string; id: string; version: number; status: string }
  | { outcome: 'rejected'; code: string; detail: string; retriable: boolean; commandId?: string }
);

export interface IngestConnection {
  brokers: string[];
  /** The deployment's MEMORY_NAMESPACE ('' for none): topics are `<namespace>.memory.ingest`. */
  namespace: string;
}

const topicOf = (c: IngestConnection, name: string): string => (c.namespace ? `${c.namespace}.${name}` : name);
const kafkaOf = (c: IngestConnection, clientId: string): Kafka => new Kafka({ clientId, brokers: c.brokers, logLevel: logLevel.NOTHING });

/** The producer's Ed25519 key: the private half signs, the public JWK goes into POST /v1/capabilities as `producerKey`. */
export interface ProducerKey {
  privateKey: KeyObject;
  publicJwk: { kty: 'OKP'; crv: 'Ed25519'; x: string };
}

export function generateProducerKey(): ProducerKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  return producerKeyOf(privateKey);
}

function producerKeyOf(privateKey: KeyObject): ProducerKey {
  const { x } = privateKey.export({ format: 'jwk' });
  if (typeof x !== 'string') throw new Error('not an Ed25519 key');
  return { privateKey, publicJwk: { kty: 'OKP', crv: 'Ed25519', x } };
}

/** RFC 8785 canonical JSON: what the proof's body digest is taken over, however the value is spaced. */
function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

const b64url = (data: string | Buffer): string => Buffer.from(data).toString('base64url');
const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('base64url');

/** The `capability-proof` of one message: a compact JWS by the key over its topic, key, body, the capability and now. */
export function proofOf(key: ProducerKey, capability: string, message: { topic: string; key: string; value: unknown }, iat = Math.floor(Date.now() / 1000)): string {
  const header = b64url(JSON.stringify({ alg: 'EdDSA', typ: 'gm-ingest-pop+jwt', jwk: key.publicJwk }));
  const payload = b64url(JSON.stringify({
    jti: randomUUID(), iat, topic: message.topic, key: message.key, bd: sha256(canonicalJson(message.value)), ath: sha256(capability),
  }));
  return `${header}.${payload}.${b64url(sign(null, Buffer.from(`${header}.${payload}`), key.privateKey))}`;
}

/**
 * An idempotent producer: a broker-side retry never appends a request twice. Messages are keyed
 * by subject, so one subject's writes stay in one partition and are admitted in order. Each is
 * signed by `key`, the key `capability` is bound to. Without a key the capability goes alone, the
 * old bearer form: only for a gateway that still accepts it (docs/ingest.md#migrating-producers).
 */
export async function openIngestProducer(
  c: IngestConnection & { capability: string; key?: ProducerKey },
): Promise<{ send(requests: IngestRequest[]): Promise<void>; close(): Promise<void> }> {
  const producer: Producer = kafkaOf(c, 'ingest-example-producer').producer({
    idempotent: true, maxInFlightRequests: 1,
    // murmur2 of the key, as Java clients and the services' own partitioner compute it.
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  const topic = topicOf(c, 'memory.ingest');
  return {
    send: async (requests) => {
      await producer.send({
        topic,
        acks: -1,
        compression: CompressionTypes.None,
        messages: requests.map((r) => ({
          key: r.subjectId,
          value: JSON.stringify(r),
          headers: c.key === undefined
            ? { capability: c.capability }
            : { capability: c.capability, 'capability-proof': proofOf(c.key, c.capability, { topic, key: r.subjectId, value: r }) },
        })),
      });
    },
    close: () => producer.disconnect(),
  };
}

/** The topic with the results of this capability's tenant: `<namespace>.memory.ingest.results.<tenant>`. */
export const resultsTopicOf = (c: Pick<IngestConnection, 'namespace'> & { capability: string }): string =>
  ingestResultsTopicOf({ capability: c.capability }, c.namespace);

/**
 * Reads the capability's tenant's results topic (committed transactions only) until every wanted
 * requestId has a result of this capability's principal, or the timeout; answers every such
 * result, duplicates included, so a caller can check there is exactly one each. Results of
 * other principals under the same requestIds are not ours and are left out. Progress goes to
 * `onProgress`.
 */
export async function collectResults(
  c: IngestConnection & { capability: string; requestIds: ReadonlySet<string>; timeoutMs: number; onProgress?: (seen: number) => void },
): Promise<Map<string, IngestResult[]>> {
  const kafka = kafkaOf(c, 'ingest-example-results');
  const collector = new IngestResultCollector({ capability: c.capability }, c.requestIds);
  const topic = resultsTopicOf(c);
  const deadline = Date.now() + c.timeoutMs;
  const admin = kafka.admin();
  await admin.connect();
  try {
    if (!(await topicCreated(admin, topic, deadline))) return new Map();
  } finally {
    await admin.disconnect();
  }
  // allowAutoTopicCreation off: the ingest-gateway creates the topic, as it wants it.
  const consumer = kafka.consumer({ groupId: `ingest-example-${randomUUID()}`, readUncommitted: false, allowAutoTopicCreation: false });
  // A consumer may be handed a message again (a rejoin fetches from its last commit): a result
  // is counted once per log position, so duplicates left are ones on the log.
  const positions = new Set<string>();
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        const position = `${partition}:${message.offset}`;
        if (positions.has(position)) return;
        positions.add(position);
        if (collector.offer(message.value) !== undefined) c.onProgress?.(collector.results.size);
      },
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([collector.done, new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now()))))]);
    clearTimeout(timer);
    return new Map([...collector.results].map(([requestId, results]): [string, IngestResult[]] => [requestId, [...results]]));
  } finally {
    await consumer.disconnect();
  }
}

/**
 * Whether the tenant's results topic exists by the deadline. The ingest-gateway creates it with
 * the tenant's first request it verifies, which may still be on its way: asked again, backing off
 * from 50 ms to 1 s.
 */
async function topicCreated(admin: Admin, topic: string, deadline: number): Promise<boolean> {
  for (let wait = 50; ; wait = Math.min(1_000, wait * 2)) {
    if ((await admin.listTopics()).includes(topic)) return true;
    if (Date.now() + wait > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

/** A request of the example's own: one fact per subject. */
export function exampleRequest(i: number): IngestRequest {
  return {
    requestId: `example-${randomUUID()}`,
    subjectId: `example-subject-${i % 100}`,
    resource: { kind: 'project', id: 'maple' },
    kind: 'fact',
    content: `Example fact number ${i}`,
    provenance: [{ source: 'import', observedAt: new Date().toISOString() }],
    trust: 'trusted',
  };
}

async function main(): Promise<void> {
  if (process.argv[2] === 'keygen') {
    const file = process.argv[3];
    if (!file) throw new Error('keygen FILE: where to write the private key (JWK, mode 0600)');
    const key = generateProducerKey();
    writeFileSync(file, JSON.stringify(key.privateKey.export({ format: 'jwk' })), { mode: 0o600, flag: 'wx' });
    process.stdout.write(`${JSON.stringify(key.publicJwk)}\n`);
    return;
  }
  const capability = process.env.MEMORY_CAPABILITY;
  if (!capability) throw new Error('MEMORY_CAPABILITY must hold a write capability bound to the producer key (POST /v1/capabilities with producerKey)');
  const keyFile = process.env.MEMORY_PRODUCER_KEY_FILE;
  if (!keyFile) throw new Error('MEMORY_PRODUCER_KEY_FILE must name the producer key (made by: ingest-producer.ts keygen FILE)');
  const key = producerKeyOf(createPrivateKey({ key: JSON.parse(readFileSync(keyFile, 'utf8')) as Record<string, string>, format: 'jwk' }));
  const connection = { brokers: (process.env.KAFKA_BROKERS ?? '127.0.0.1:19092').split(','), namespace: process.env.MEMORY_NAMESPACE ?? '' };
  const count = Number(process.argv[2] ?? 1);
  const requests = Array.from({ length: count }, (_, i) => exampleRequest(i));
  const producer = await openIngestProducer({ ...connection, capability, key });
  for (let i = 0; i < requests.length; i += 500) await producer.send(requests.slice(i, i + 500));
  await producer.close();
  process.stderr.write(`produced ${count} requests; waiting for their results\n`);
  const results = await collectResults({
    ...connection, capability, requestIds: new Set(requests.map((r) => r.requestId)), timeoutMs: 60_000,
    onProgress: (seen) => { if (seen % 100 === 0) process.stderr.write(`  ${seen}/${count} results\n`); },
  });
  const outcomes = new Map<string, number>();
  for (const [first] of results.values()) {
    const label = first === undefined ? 'none' : first.outcome === 'accepted' ? `accepted (${first.status})` : `rejected ${first.code}`;
    outcomes.set(label, (outcomes.get(label) ?? 0) + 1);
  }
  // One request: its result too (ids and codes only; a problem's detail may quote the request).
  const [only] = count === 1 ? [...results.values()].flat() : [];
  const result = only === undefined ? {} : {
    result: only.outcome === 'accepted'
      ? { outcome: only.outcome, id: only.id, version: only.version, status: only.status }
      : { outcome: only.outcome, code: only.code, retriable: only.retriable },
  };
  process.stdout.write(`${JSON.stringify({ requests: count, results: results.size, outcomes: Object.fromEntries(outcomes), ...result })}\n`);
  if (results.size < count) process.exitCode = 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
