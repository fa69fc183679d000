/**
 * The OpenTelemetry GenAI operation of the memory routes (`gen_ai.operation.name` on their HTTP
 * server spans, docs/operations.md#traces), keyed as the operations table names routes
 * (@gm/contracts OPERATIONS). Routes that are not a memory operation in the conventions' sense
 * (grants, jobs, capabilities) carry none.
 */
const GENAI_OPERATIONS: Readonly<Record<string, string>> = {
  // A write creates a record or supersedes one under the same id.
  'POST /v1/memories': 'upsert_memory',
  'POST /v1/memories:batch': 'upsert_memory',
  'POST /v1/memories/{id}/promote': 'update_memory',
  'POST /v1/memories/{id}/reject': 'update_memory',
  'POST /v1/search': 'search_memory',
  'GET /v1/subjects/{subjectId}/summary': 'search_memory',
  'DELETE /v1/memories/{id}': 'delete_memory',
  'POST /v1/subjects/{subjectId}/forget': 'delete_memory',
};

export const genAiOperationOf = (operation: { method: string; path: string }): string | undefined => GENAI_OPERATIONS[`${operation.method} ${operation.path}`];
