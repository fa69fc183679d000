/**
 * @gm/client: the TypeScript SDK of the governed memory API (docs/agents.md). Types come from the
 * zod contracts of @gm/contracts, never from hand-kept copies.
 */
export { MemoryClient, MemorySession, type BatchItem, type MutationOptions, type NewDelegation, type NewGrant, type NewLegalHold, type Search, type Versioned, type WriteMemory, type WriteOptions } from './client.ts';
export { readCapability } from './capability.ts';
export { IngestResultCollector, ingestResultsTopicOf, type ResultOwner } from './ingest-results.ts';
export { MemoryApiError, MemoryNetworkError } from './errors.ts';
export { issueCapability, issuedCapabilities, type CapabilityRequest, type IssuerOptions } from './issuer.ts';
export { DEFAULT_RETRY, type CapabilitySource, type ClientOptions, type IssuedToken, type RetryPolicy } from './transport.ts';
