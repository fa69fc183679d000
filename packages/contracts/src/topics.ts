/** Topic names of design §4. Commands and events are co-partitioned by `tenant/subject`. */
export const TOPICS = {
  commands: 'memory.commands',
  events: 'memory.events',
  replies: 'memory.replies',
  records: 'memory.records',
  policyChanges: 'policy.changes',
  deletionTasks: 'deletion.tasks',
  deletionAcks: 'deletion.acks',
  deletionReceipts: 'deletion.receipts',
  /** Wrapped encryption keys by key id (compacted); a destroyed key is a final marker record (§8.5). */
  keys: 'memory.keys',
  /** Writes produced by platforms (docs/ingest.md): admitted by the ingest-gateway. Its results go to `ingestResultsTopic(tenant)`. */
  ingest: 'memory.ingest',
} as const;
export type TopicName = (typeof TOPICS)[keyof typeof TOPICS];

export const dlqTopic = (topic: string): string => `${topic}.dlq`;

/** The aggregate key: one write-admission partition owns a subject's whole state. */
export const subjectKey = (tenantId: string, subjectId: string): string => `${tenantId}/${subjectId}`;

/**
 * Every tenant's memory.ingest results have a topic of their own (design §4.1): Kafka authorises
 * per topic, so a tenant's producers are granted read on theirs alone and no reader of the results
 * learns another tenant's request or record ids. The topics are created at runtime, by the
 * ingest-gateway, when a tenant's first verified request arrives; a Kafka ACL grants the prefix.
 */
export const INGEST_RESULTS_TOPIC_PREFIX = 'memory.ingest.results.';

/**
 * The results topic of a tenant: the prefix and the tenant id escaped so that the name is a legal
 * Kafka topic and two tenants never share one. Tenant ids are `[A-Za-z0-9._-]` (TenantId), but
 * Kafka refuses a topic whose name differs from an existing one only by `.` against `_` (their
 * metric names collide): `_` is written `__` and `.` is written `_d`, so the tenant's part holds
 * no `.` and the escaping is injective (a prefix-free code). 64 characters escape to at most 128.
 */
export const ingestResultsTopic = (tenant: string): string =>
  `${INGEST_RESULTS_TOPIC_PREFIX}${tenant.replace(/[._]/g, (c) => (c === '_' ? '__' : '_d'))}`;
