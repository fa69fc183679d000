import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type {
  AddDelegationRequest, AddGrantRequest, AsyncWriteAccepted, CommandStatusResponse, DelegationCreatedResponse, DeletionAccepted, DeletionJob,
  EvidencePacket, GrantCreatedResponse, LegalHold, LegalHoldCreatedResponse, MemoryRecord, MutationResponse, PacketValidation,
  PlaceLegalHoldRequest, PolicyRevisionResponse, ReceiptPublicKey, ReceiptResponse, RecordHistory, RejectionReason, SearchRequest,
  SubjectSummaries, VersionedRequest, WriteMemoryBatchResponse, WriteMemoryRequest,
} from '@gm/contracts';
import { MemoryApiError } from './errors.ts';
import { Transport, type Call, type ClientOptions } from './transport.ts';

/** Request bodies as a caller writes them (defaults may be left out): the zod contracts' input types. */
export type WriteMemory = z.input<typeof WriteMemoryRequest>;
export type BatchItem = WriteMemory & { idempotencyKey?: string };
export type Search = z.input<typeof SearchRequest>;
export type Versioned = z.input<typeof VersionedRequest>;
export type NewGrant = z.input<typeof AddGrantRequest>;
export type NewDelegation = z.input<typeof AddDelegationRequest>;
export type NewLegalHold = z.input<typeof PlaceLegalHoldRequest>;

export interface MutationOptions {
  /** Sent as `Idempotency-Key`; one is generated when absent, so a retry never writes twice. */
  idempotencyKey?: string;
}

export interface WriteOptions extends MutationOptions {
  /**
   * `stored` (`Prefer: wait-for=stored`): answered once the write is decided and stored, without
   * waiting for the search indexes. This client's later searches still see it: they send the
   * session's consistency token, and the server waits for it.
   */
  waitFor?: 'stored';
}

const waitHeaders = (options: { waitFor?: 'stored' } | undefined): Record<string, string> =>
  options?.waitFor === 'stored' ? { prefer: 'wait-for=stored' } : {};

const CONSISTENCY_TOKEN = 'consistency-token';
const path = (strings: TemplateStringsArray, ...ids: string[]) => strings.reduce((out, s, i) => out + s + (i < ids.length ? encodeURIComponent(ids[i] ?? '') : ''), '');
const newKey = () => randomUUID();

/**
 * The memory API, one method per route. Answers are the contracts' types; failures are
 * MemoryApiError (problem+json, with `code` and `retriable`) or MemoryNetworkError. Reads and
 * keyed mutations are retried with backoff on retriable failures; admin mutations are not.
 */
export class MemoryClient {
  /** Shared with the sessions made from this client: one capability cache for all. */
  protected readonly transport: Transport;

  constructor(options: ClientOptions | Transport) {
    this.transport = options instanceof Transport ? options : new Transport(options);
  }

  /**
   * A session: the same methods, carrying the consistency token of every answer into the next
   * request, so each read sees this session's earlier writes (read-your-writes across API instances).
   */
  session(): MemorySession {
    return new MemorySession(this.transport);
  }

  protected async send<T>(call: Call): Promise<T> {
    return (await this.transport.send<T>(call)).body;
  }

  private mutation<T>(method: 'POST' | 'DELETE', route: string, body: unknown, options: MutationOptions = {}, headers: Record<string, string> = {}): Promise<T> {
    return this.send<T>({ method, path: route, body, headers: { 'idempotency-key': options.idempotencyKey ?? newKey(), ...headers }, safeToRetry: true });
  }

  private read<T>(route: string, body?: unknown): Promise<T> {
    return this.send<T>({ method: body === undefined ? 'GET' : 'POST', path: route, body, safeToRetry: true });
  }

  private admin<T>(method: 'POST' | 'DELETE', route: string, body?: unknown): Promise<T> {
    return this.send<T>({ method, path: route, body, safeToRetry: false });
  }

  // Memories

  /** POST /v1/memories: 201 once admitted (an untrusted write is admitted as `quarantined`). */
  remember = (memory: WriteMemory, options?: WriteOptions) => this.mutation<MutationResponse>('POST', '/v1/memories', memory, options, waitHeaders(options));
  /** POST /v1/memories with `Prefer: respond-async`: 202 once the command is durably in the log; ask `command()` for its outcome. */
  rememberAsync = (memory: WriteMemory, options?: MutationOptions) =>
    this.mutation<AsyncWriteAccepted>('POST', '/v1/memories', memory, options, { prefer: 'respond-async' });

  /** POST /v1/memories:batch: each item answered on its own; items without a key get one, so the batch can be retried. */
  rememberBatch = (items: BatchItem[], options: { async?: boolean; waitFor?: 'stored' } = {}) =>
    this.send<WriteMemoryBatchResponse>({
      method: 'POST', path: '/v1/memories:batch', body: { items: items.map((i) => ({ ...i, idempotencyKey: i.idempotencyKey ?? newKey() })) },
      headers: options.async ? { prefer: 'respond-async' } : waitHeaders(options), safeToRetry: true,
    });

  /** GET /v1/commands/{commandId}: how far an asynchronous write got. */
  command = (commandId: string) => this.read<CommandStatusResponse>(path`/v1/commands/${commandId}`);
  /** GET /v1/memories/{id}: the record with its content (active, or superseded by a correction). */
  get = (id: string) => this.read<MemoryRecord>(path`/v1/memories/${id}`);
  /** GET /v1/memories/{id}/history: its versions and supersession chain, metadata only. */
  history = (id: string) => this.read<RecordHistory>(path`/v1/memories/${id}/history`);
  promote = (id: string, request: Versioned, options?: MutationOptions) => this.mutation<MutationResponse>('POST', path`/v1/memories/${id}/promote`, request, options);
  /** POST /v1/memories/{id}/reject: `reason`, a code (`injected-instruction`, `inaccurate`, …), is kept in the record's history. */
  reject = (id: string, request: Pick<Versioned, 'expectedVersion'> & { reason?: RejectionReason }, options?: MutationOptions) =>
    this.mutation<MutationResponse>('POST', path`/v1/memories/${id}/reject`, request, options);
  /** GET /v1/review/quarantine: quarantined records in the reviewer's partitions, with their content. */
  quarantine = () => this.read<{ items: MemoryRecord[] }>('/v1/review/quarantine');

  // Reading

  /** POST /v1/search: an evidence packet of what this capability may see, for its purpose. */
  search = (request: Search) => this.read<EvidencePacket>('/v1/search', request);
  /** POST /v1/packets/{id}/validate: whether each item of a packet may still be cited. */
  validatePacket = (packetId: string) => this.read<PacketValidation>(path`/v1/packets/${packetId}/validate`, {});
  summary = (subjectId: string) => this.read<SubjectSummaries>(path`/v1/subjects/${subjectId}/summary`);

  // Forgetting

  delete = (id: string, options?: MutationOptions) => this.mutation<DeletionAccepted>('DELETE', path`/v1/memories/${id}`, undefined, options);
  /** POST /v1/subjects/{subjectId}/forget: every record about the subject in the tenant. */
  forget = (subjectId: string, options?: MutationOptions) => this.mutation<DeletionAccepted>('POST', path`/v1/subjects/${subjectId}/forget`, {}, options);
  deletionJob = (jobId: string) => this.read<DeletionJob>(path`/v1/deletion-jobs/${jobId}`);
  /** The signed receipt with its decoded payload (409 `MEM_NOT_YET_AVAILABLE`, retriable, until the job is done; 404 for a job the caller may not see). */
  receipt = (jobId: string) => this.read<ReceiptResponse>(path`/v1/deletion-jobs/${jobId}/receipt`);
  /**
   * The signed receipt once the job is done: asks again every `intervalMs` (default 1 s) while it
   * is not signed yet, for at most `timeoutMs` (default 2 min), then throws the last
   * `MEM_NOT_YET_AVAILABLE`. A job the deletion-orchestrator has not recorded yet reads as not
   * found for a moment after its 202, so a 404 is asked again for the first `unknownGraceMs`
   * (default 10 s); after that, and any other error, is thrown at once.
   */
  waitForReceipt = async (jobId: string, options: { timeoutMs?: number; intervalMs?: number; unknownGraceMs?: number } = {}): Promise<ReceiptResponse> => {
    const started = Date.now();
    const deadline = started + (options.timeoutMs ?? 120_000);
    for (;;) {
      try {
        return await this.receipt(jobId);
      } catch (err) {
        const notYet = err instanceof MemoryApiError
          && (err.code === 'MEM_NOT_YET_AVAILABLE' || (err.code === 'MEM_NOT_FOUND' && Date.now() - started < (options.unknownGraceMs ?? 10_000)));
        if (!notYet || Date.now() >= deadline) throw err;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.min(options.intervalMs ?? 1_000, deadline - Date.now()))));
    }
  };
  /** The receipt as the bare compact JWS (`Accept: application/jose`), for archiving. */
  receiptJws = (jobId: string) =>
    this.send<string>({ method: 'GET', path: path`/v1/deletion-jobs/${jobId}/receipt`, headers: { accept: 'application/jose' }, safeToRetry: true, expect: 'text' });
  /** GET /v1/receipt-keys: the JWKS that verifies receipts (public). */
  receiptKeys = () => this.send<{ keys: ReceiptPublicKey[] }>({ method: 'GET', path: '/v1/receipt-keys', safeToRetry: true, anonymous: true });

  // Administration, never retried: a lost answer surfaces as an error rather than a repeat. Sent
  // again, a grant id rewrites that grant with the new body (last writer wins, possibly over
  // another administrator's change), and a legal hold id already in use is 409 MEM_ID_TAKEN.

  addGrant = (grant: NewGrant) => this.admin<GrantCreatedResponse>('POST', '/v1/grants', grant);
  removeGrant = (grantId: string) => this.admin<PolicyRevisionResponse>('DELETE', path`/v1/grants/${grantId}`);
  addDelegation = (delegation: NewDelegation) => this.admin<DelegationCreatedResponse>('POST', '/v1/delegations', delegation);
  revokeDelegation = (delegationId: string) => this.admin<PolicyRevisionResponse>('POST', path`/v1/delegations/${delegationId}/revoke`, {});
  revokeCapability = (jti: string) => this.admin<PolicyRevisionResponse>('POST', path`/v1/capabilities/${jti}/revoke`, {});
  revokeAgent = (agentId: string) => this.admin<PolicyRevisionResponse>('POST', path`/v1/agents/${agentId}/revoke`, {});
  placeLegalHold = (hold: NewLegalHold) => this.admin<LegalHoldCreatedResponse>('POST', '/v1/legal-holds', hold);
  legalHolds = () => this.read<{ items: LegalHold[] }>('/v1/legal-holds');
  releaseLegalHold = (holdId: string) => this.admin<PolicyRevisionResponse>('DELETE', path`/v1/legal-holds/${holdId}`);

  // Operations (public)

  health = () => this.send<{ status: string }>({ method: 'GET', path: '/healthz', safeToRetry: true, anonymous: true });
  ready = () => this.send<{ status: string }>({ method: 'GET', path: '/readyz', safeToRetry: true, anonymous: true });
  metrics = () => this.send<string>({ method: 'GET', path: '/metrics', safeToRetry: true, anonymous: true, expect: 'text' });
  openApi = () => this.send<Record<string, unknown>>({ method: 'GET', path: '/openapi.json', safeToRetry: true, anonymous: true });
}

/** A MemoryClient that sends the newest consistency token it was answered with on every request. */
export class MemorySession extends MemoryClient {
  private token: string | undefined;

  /** The token this session carries (to hand to another process, or to `resume`). */
  get consistencyToken(): string | undefined {
    return this.token;
  }

  /** Carries a token got elsewhere (another session, a queue message) from now on. */
  resume(token: string): this {
    this.token = token;
    return this;
  }

  protected override async send<T>(call: Call): Promise<T> {
    const headers = this.token === undefined || call.anonymous ? call.headers : { ...call.headers, [CONSISTENCY_TOKEN]: this.token };
    const answer = await this.transport.send<T>({ ...call, ...(headers === undefined ? {} : { headers }) });
    // A mutation's token covers the one it was sent with, so the newest token is all a session needs.
    this.token = answer.headers.get(CONSISTENCY_TOKEN) ?? this.token;
    return answer.body;
  }
}
