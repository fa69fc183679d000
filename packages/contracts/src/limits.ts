/** Size bounds of design §5.1. Shared by the API edge and write-admission. */
export const LIMITS = {
  maxIdLength: 128,
  maxContentBytes: 32 * 1024,
  maxPurposes: 16,
  /** Items of one POST /v1/memories:batch. */
  maxBatchItems: 500,
  maxProvenance: 32,
  /** Other records of the subject one `DELETE ?scope=content` deletes with the named one (the rest are the receipt's residual). */
  maxDeletionCopies: 500,
  maxQueryLength: 1024,
  maxSearchLimit: 50,
  maxTokenBudget: 32_000,
  maxCapabilityTtlSeconds: 15 * 60,
  /** Partitions a forget names: 5 per scope of a capability (64 scopes at most). */
  maxForgetPartitions: 5 * 64,
} as const;
