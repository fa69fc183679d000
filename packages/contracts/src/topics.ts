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
  /** Writes produced by platforms (docs/ingest.md): admitted by the ingest-gateway. */
  ingest: 'memory.ingest',
  /** One result per memory.ingest request, keyed by its requestId. */
  ingestResults: 'memory.ingest.results',
} as const;
export type TopicName = (typeof TOPICS)[keyof typeof TOPICS];

export const dlqTopic = (topic: string): string => `${topic}.dlq`;

/** The aggregate key: one write-admission partition owns a subject's whole state. */
export const subjectKey = (tenantId: string, subjectId: string): string => `${tenantId}/${subjectId}`;
