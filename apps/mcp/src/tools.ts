import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { MemoryApiError, MemoryNetworkError, type MemoryClient } from '@gm/client';
import { Id, MemoryKind, Purpose, RejectionReason, ResourceRef, SearchMode, Visibility } from '@gm/contracts';

/** What a session's tools fill in where the model leaves a field out: taken from the session's capability. */
export interface ToolDefaults {
  resource: z.infer<typeof ResourceRef>;
  purpose: string;
}

export const SERVER_INFO = { name: 'governed-memory', version: '0.1.0' } as const;

/** A tool's answer: the JSON as text (what every MCP client shows) and as structured content. */
const answer = (value: object): CallToolResult => ({ content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value as Record<string, unknown> });

/**
 * A refusal of the memory API as a tool error the model can read and act on: the problem's
 * code, title and detail. Never thrown: a denied call must not end the session.
 */
function toolError(error: unknown): CallToolResult {
  if (error instanceof MemoryApiError || error instanceof MemoryNetworkError) {
    const problem = error instanceof MemoryApiError
      ? { code: error.code, status: error.status, title: error.title, detail: error.detail, retriable: error.retriable }
      : { code: error.code, detail: error.message, retriable: true };
    return { isError: true, content: [{ type: 'text', text: `${problem.code}: ${problem.detail}` }], structuredContent: problem };
  }
  throw error;
}

const guarded = <A>(run: (args: A) => Promise<object>) => async (args: A): Promise<CallToolResult> => {
  try {
    return answer(await run(args));
  } catch (error) {
    return toolError(error);
  }
};

/**
 * The MCP server of one session: seven tools over one MemoryClient, which holds that session's
 * capability and nothing else. The server has no privileges of its own: every call is the
 * capability's, judged by the memory's policy decision point like any other request.
 */
export function memoryMcpServer(client: MemoryClient, defaults: ToolDefaults): McpServer {
  const server = new McpServer(SERVER_INFO, {
    instructions:
      'Governed memory: what you remember is quarantined until a person reviews it, and you can never promote your own memories. ' +
      'recall returns only what your capability may read for its purpose, with provenance and allowed use; cite it by packetId and check it with validate_packet before relying on it later. ' +
      'Deletions are jobs that end in a signed receipt.',
  });

  server.registerTool('remember', {
    title: 'Remember a fact',
    description:
      'Store a memory about a subject. Governed: it is written as untrusted (model-originated), so it is quarantined and not recalled ' +
      'until a reviewer other than you promotes it; its provenance records that it came through this tool. The partition comes from ' +
      `your capability (default resource ${defaults.resource.kind}:${defaults.resource.id}); writing outside it is refused.`,
    inputSchema: {
      content: z.string().min(1).describe('the memory itself, one fact or preference in plain words'),
      subjectId: Id.describe('who or what it is about (the unit of forgetting), e.g. a customer id'),
      kind: MemoryKind.default('fact').describe('fact, preference, working_note or skill; each kind has its own lifetime'),
      visibility: Visibility.default('team').describe('team, private (only your principal) or restricted'),
      resource: ResourceRef.optional().describe('the project, case or workspace it belongs to; default: your capability\'s first scope'),
      purposes: z.array(Purpose).min(1).optional().describe('who may recall it, by purpose; default: your capability\'s purpose'),
      supersedesId: Id.optional().describe('the id of a memory this one corrects (takes effect when this one is promoted)'),
      sourceUri: z.string().max(2048).optional().describe('where you learned it (a URL or a tool call id), kept as provenance'),
    },
    annotations: { destructiveHint: false, idempotentHint: false, openWorldHint: false },
  }, guarded(async (a) => client.remember({
    content: a.content, subjectId: a.subjectId, kind: a.kind, visibility: a.visibility,
    resource: a.resource ?? defaults.resource, purposes: a.purposes ?? [defaults.purpose],
    // Model-originated: never trusted on its own word. Promotion is a reviewer's act, not a tool's.
    trust: 'untrusted',
    provenance: [{ source: 'tool', uri: a.sourceUri ?? 'mcp:remember', observedAt: new Date().toISOString() }],
    ...(a.supersedesId === undefined ? {} : { supersedesId: a.supersedesId }),
  })));

  server.registerTool('recall', {
    title: 'Recall memories',
    description:
      'Search memory. Governed: only records your capability may read, in its partitions and for its purpose, active and unexpired; ' +
      'never quarantined, deleted or another team\'s. Returns an evidence packet: each item with its excerpt, provenance, the purposes it may be used for ' +
      '(allowedUse) and why it ranked where it did. Cite the packetId; validate_packet says later whether it still holds.',
    inputSchema: {
      query: z.string().min(1).max(1024).describe('what you want to know, in your own words'),
      subjectId: Id.optional().describe('only memories about this subject'),
      kinds: z.array(MemoryKind).min(1).optional(),
      limit: z.number().int().min(1).max(50).default(8),
      mode: SearchMode.optional().describe('lexical, semantic or hybrid (the default where the memory keeps vectors)'),
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
  }, guarded(async (a) => client.search({
    query: a.query, limit: a.limit,
    ...(a.subjectId === undefined ? {} : { subjectId: a.subjectId }),
    ...(a.kinds === undefined ? {} : { kinds: a.kinds }),
    ...(a.mode === undefined ? {} : { mode: a.mode }),
  })));

  server.registerTool('validate_packet', {
    title: 'Validate a cited evidence packet',
    description:
      'Check whether the items of an evidence packet you were given by recall may still be cited. Governed: an item becomes invalid when its record ' +
      'is superseded, expires, is deleted or forgotten, or when your access to it was revoked, so cite only what this says is valid.',
    inputSchema: { packetId: Id },
    annotations: { readOnlyHint: true, openWorldHint: false },
  }, guarded(async (a) => client.validatePacket(a.packetId)));

  server.registerTool('forget_subject', {
    title: 'Forget everything about a subject',
    description:
      'Right to be forgotten. Governed: every memory about the subject in your tenant becomes unreadable at once, then every copy is removed ' +
      '(index, vectors, caches, summaries, packets, keys) and verified; the job ends in a signed receipt. Needs request_delete. A legal hold keeps the content but still revokes access.',
    inputSchema: { subjectId: Id },
    annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false },
  }, guarded(async (a) => client.forget(a.subjectId)));

  server.registerTool('delete_memory', {
    title: 'Delete one memory',
    description: 'Delete one memory by id. Governed: unreadable at once, every copy removed and verified, a signed receipt at the end. Needs request_delete on its partition; a memory you may not see answers not found.',
    inputSchema: { id: Id },
    annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false },
  }, guarded(async (a) => client.delete(a.id)));

  server.registerTool('deletion_status', {
    title: 'Follow a deletion job',
    description: 'The status of a deletion or forget job (invalidating, verifying, verified, failed), the evidence per copy, and its signed receipt once verified. Governed: only jobs your agent requested (any job with admin).',
    inputSchema: { jobId: Id },
    annotations: { readOnlyHint: true, openWorldHint: false },
  }, guarded(async (a) => {
    const job = await client.deletionJob(a.jobId);
    // The receipt is signed just after the job is verified: until then there is none to show.
    const receipt = job.status === 'verified' ? await client.receiptJws(a.jobId).catch(notYet) : undefined;
    return {
      jobId: job.jobId, status: job.status, mode: job.mode, records: job.recordIds.length, updatedAt: job.updatedAt,
      evidence: job.evidence.map((e) => ({ target: e.target, status: e.status })),
      ...(job.failureReason === undefined ? {} : { failureReason: job.failureReason }),
      ...(job.legalHold === undefined ? {} : { legalHold: job.legalHold }),
      ...(receipt === undefined ? {} : { receipt }),
    };
  }));

  server.registerTool('review_quarantine', {
    title: 'Review quarantined memories',
    description:
      'For a reviewer\'s capability (review, promote): list the quarantined memories in your partitions, promote one (it becomes recallable) ' +
      'or reject one (it is tombstoned). Governed: you can never promote a memory your own agent wrote, and a stale expectedVersion is a conflict.',
    inputSchema: {
      action: z.enum(['list', 'promote', 'reject']),
      id: Id.optional().describe('the memory to promote or reject'),
      expectedVersion: z.number().int().min(1).optional().describe('its version as listed'),
      visibility: Visibility.optional().describe('promote only: widen or narrow who sees it'),
      reason: RejectionReason.optional().describe('reject only: why, as a code kept in the memory\'s history'),
    },
    annotations: { destructiveHint: true, openWorldHint: false },
  }, guarded(async (a) => {
    if (a.action === 'list') {
      const { items } = await client.quarantine();
      return { items: items.map((r) => ({ id: r.id, version: r.version, subjectId: r.subjectId, kind: r.kind, content: r.content, agentId: r.agentId, trust: r.trust, provenance: r.provenance, createdAt: r.createdAt })) };
    }
    if (a.id === undefined || a.expectedVersion === undefined) {
      return toolErrorOf('MEM_VALIDATION', `${a.action} needs id and expectedVersion (list shows both)`);
    }
    return a.action === 'promote'
      ? client.promote(a.id, { expectedVersion: a.expectedVersion, ...(a.visibility === undefined ? {} : { visibility: a.visibility }) })
      : client.reject(a.id, { expectedVersion: a.expectedVersion, ...(a.reason === undefined ? {} : { reason: a.reason }) });
  }));

  return server;
}

const notYet = (error: unknown): undefined => {
  if (error instanceof MemoryApiError && error.code === 'MEM_NOT_YET_AVAILABLE') return undefined;
  throw error;
};

/** A refusal of the tool itself (its arguments), shaped as the API's problems are. */
function toolErrorOf(code: string, detail: string): never {
  throw new MemoryApiError({ type: 'about:blank', title: 'Unprocessable Content', status: 422, code, detail });
}
