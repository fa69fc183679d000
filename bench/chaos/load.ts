/**
 * The fault suite's sustained mixed load (docs/reliability.md "The fault suite"), through every
 * entry point at once: synchronous HTTP writes with idempotency keys (retried on 503 or no
 * answer, with the same key), asynchronous writes, memory.ingest producers, searches by a
 * reader who may see one of the two resources, deletes and forgets of records written earlier,
 * and grant removals and capability revocations each followed at once by a read. Everything is
 * entered in the ledger; the invariants judge it afterwards.
 */
import { generateProducerKey, openIngestProducer, type IngestRequest } from '@gm/examples/ingest-producer';
import { PURPOSE, VOCABULARY, contentOf } from '../corpus.ts';
import { ChaosHttp, type HttpAnswer } from './http.ts';
import type { AcknowledgedWrite, Ledger } from './ledger.ts';
import { HIDDEN, READABLE, type ChaosRights } from './rights.ts';

export interface LoadTarget {
  url: string;
  issuerCredential: string;
  brokers: string[];
  namespace: string;
}

/**
 * How hard the load pushes. It is meant to be sustainable with nothing failed (the control
 * scenario's lag stays flat): a load the deployment cannot keep up with measures its backlog,
 * not a fault.
 */
export interface LoadShape {
  syncWriters: number;
  /** The unit of the lanes' pauses, ms: searches every one, asynchronous writes every two, five ingest requests every eight, a delete or forget every ten. */
  pauseMs: number;
}

/** How long a write keeps being retried after the load stopped, before the load gives up on it. */
const GIVE_UP_AFTER_STOP_MS = 120_000;

export interface RunningLoad {
  /** Stops starting new operations; resolves once every lane has finished its last one. */
  stop(): Promise<void>;
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function writeBody(n: number, subjectId: string, resource: 'readable' | 'hidden'): Record<string, unknown> {
  return {
    subjectId, resource: { ...(resource === 'readable' ? READABLE : HIDDEN) }, kind: 'fact', trust: 'trusted', content: contentOf(5_000_000 + n),
    provenance: [{ source: 'user', observedAt: new Date().toISOString() }],
  };
}

const accepted = (answer: HttpAnswer | undefined, status: number): answer is HttpAnswer => answer?.status === status;

export function startLoad(target: LoadTarget, rights: ChaosRights, ledger: Ledger, shape: LoadShape, run: string, clock: () => number): RunningLoad {
  const http = new ChaosHttp(target.url, ledger.answers, clock);
  let running = true;
  let stoppedAt = Number.POSITIVE_INFINITY;
  const givingUp = () => clock() > stoppedAt + GIVE_UP_AFTER_STOP_MS;
  let sequence = 0;
  const next = () => (sequence += 1);

  /** One synchronous write, retried with its key until acknowledged (or given up). */
  async function syncWrite(token: string, key: string, body: Record<string, unknown>, resource: 'readable' | 'hidden'): Promise<AcknowledgedWrite | undefined> {
    let startedAt = clock();
    const answer = await http.retried(
      () => http.send('POST', '/v1/memories', 'POST /v1/memories', token, body, { 'idempotency-key': key }),
      givingUp, () => {
        startedAt = clock();
      },
    );
    if (!accepted(answer, 201)) {
      ledger.abandoned += 1;
      return undefined;
    }
    const { id, version } = answer.body as { id: string; version: number };
    const write: AcknowledgedWrite = {
      path: 'http', key, tenant: rights.tenant, id, version, subjectId: String(body.subjectId), resource, startedAt, at: clock(), body,
    };
    ledger.writes.push(write);
    return write;
  }

  const syncWriter = async (lane: number) => {
    const token = await rights.writer();
    for (let n = 0; running; n += 1) {
      const resource = n % 4 === 3 ? 'hidden' : 'readable';
      await syncWrite(token, `${run}-w${lane}-${n}`, writeBody(next(), `s-${(lane * 7 + n) % 24}`, resource), resource);
    }
  };

  const asyncWriter = async () => {
    const token = await rights.writer();
    for (let n = 0; running; n += 1) {
      const key = `${run}-a-${n}`;
      const body = writeBody(next(), `s-${n % 24}`, 'readable');
      const answer = await http.retried(
        () => http.send('POST', '/v1/memories', 'POST /v1/memories (async)', token, body, { 'idempotency-key': key, prefer: 'respond-async' }), givingUp,
      );
      if (accepted(answer, 202)) ledger.asyncCommands.push({ commandId: (answer.body as { commandId: string }).commandId, key, subjectId: String(body.subjectId), body, at: clock() });
      else ledger.abandoned += 1;
      await pause(shape.pauseMs * 2);
    }
  };

  const ingestProducer = async () => {
    // Signed with a key its capability is bound to, as production mode requires (docs/ingest.md#producer-proofs).
    const key = generateProducerKey();
    const producer = await openIngestProducer({ brokers: target.brokers, namespace: target.namespace, capability: await rights.ingestWriter(key.publicJwk), key });
    try {
      for (let n = 0; running; n += 1) {
        const requests = Array.from({ length: 5 }, (_, i) => ({ requestId: `${run}-i-${n}-${i}`, ...writeBody(next(), `s-${(n + i) % 24}`, 'readable') }) as IngestRequest);
        // A platform's retry: the same requests (same ids) until Kafka takes them.
        for (;;) {
          try {
            await producer.send(requests);
            for (const r of requests) ledger.ingestProduced.set(r.requestId, { subjectId: r.subjectId, body: r, at: clock() });
            break;
          } catch {
            if (givingUp()) {
              ledger.abandoned += requests.length;
              break;
            }
            await pause(500);
          }
        }
        await pause(shape.pauseMs * 8);
      }
    } finally {
      await producer.close();
    }
  };

  const searcher = async () => {
    const token = await rights.reader();
    for (let n = 0; running; n += 1) {
      const startedAt = clock();
      const query = `${VOCABULARY[n % VOCABULARY.length]} ${VOCABULARY[(n * 7 + 3) % VOCABULARY.length]}`;
      const answer = await http.send('POST', '/v1/search', 'POST /v1/search', token, { query, limit: 20 });
      if (answer?.status === 200) {
        const items = (answer.body as { items?: Array<{ recordId: string }> }).items ?? [];
        ledger.searches.push({ startedAt, ids: items.map((i) => i.recordId) });
      }
      await pause(shape.pauseMs);
    }
  };

  /** Deletes of records written earlier, and now and then a forget of a subject written for it. */
  const deleter = async () => {
    const token = await rights.writer();
    const deleted = new Set<string>();
    for (let n = 0; running; n += 1) {
      if (n % 4 === 3) {
        const subjectId = `${run}-forget-${n}`;
        const written = [];
        for (let i = 0; i < 2; i += 1) written.push(await syncWrite(token, `${run}-f-${n}-${i}`, writeBody(next(), subjectId, 'readable'), 'readable'));
        for (const w of written) if (w) ledger.deleteAttempted.add(w.id);
        const answer = await http.retried(() => http.send('POST', `/v1/subjects/${subjectId}/forget`, 'POST /v1/subjects/{id}/forget', token, {}), givingUp);
        if (accepted(answer, 202)) {
          ledger.deletions.push({
            jobId: (answer.body as { jobId: string }).jobId, mode: 'forget', recordIds: written.flatMap((w) => (w ? [w.id] : [])), at: clock(),
          });
        }
      } else {
        const victim = ledger.writes.find((w) => w.path === 'http' && w.resource === 'readable' && !deleted.has(w.id) && !w.subjectId.includes('forget'));
        if (victim !== undefined) {
          deleted.add(victim.id);
          ledger.deleteAttempted.add(victim.id);
          const answer = await http.retried(() => http.send('DELETE', `/v1/memories/${victim.id}`, 'DELETE /v1/memories/{id}', token), givingUp);
          if (accepted(answer, 202)) ledger.deletions.push({ jobId: (answer.body as { jobId: string }).jobId, mode: 'delete', recordIds: [victim.id], at: clock() });
        }
      }
      await pause(shape.pauseMs * 10);
    }
  };

  /**
   * A member made and unmade: a capability revoked, then a grant removed, each followed at once
   * by a search with what was taken away — revocation takes effect on the next read (design §7).
   */
  const policyChanger = async () => {
    const admin = await rights.resourceAdmin();
    const tenantAdmin = await rights.tenantAdmin();
    for (let n = 0; running; n += 1) {
      const agentId = `${run}-temp-${n}`;
      // A retry of the same grant answers the same server-assigned id (docs/security.md#the-administration-plane).
      const granted = await http.retried(() => http.send('POST', '/v1/grants', 'POST /v1/grants', admin, {
        principal: { id: agentId, kind: 'agent' }, resource: { ...READABLE }, role: 'member', purposes: [PURPOSE],
      }), givingUp);
      if (!accepted(granted, 201)) continue;
      const grantId = String((granted.body as { grantId: string }).grantId);
      const issue = async () => {
        const answer = await http.retried(() => http.send('POST', '/v1/capabilities', 'POST /v1/capabilities', target.issuerCredential, {
          tenant: rights.tenant, agentId, actions: ['search', 'read'], scopes: [{ ...READABLE }], purpose: PURPOSE,
        }), givingUp);
        return accepted(answer, 201) ? (answer.body as { token: string; jti: string }) : undefined;
      };
      const readAfter = async (token: string, kind: 'capability' | 'grant', acknowledgedAt: number) => {
        const answer = await http.send('POST', '/v1/search', 'POST /v1/search (revoked)', token, { query: VOCABULARY[n % VOCABULARY.length], limit: 20 });
        const items = answer?.status === 200 ? ((answer.body as { items?: unknown[] }).items ?? []).length : 0;
        ledger.revocations.push({ kind, acknowledgedAt, readsAfter: 1, leakedAfter: items > 0 ? 1 : 0 });
      };
      const revoked = await issue();
      if (revoked !== undefined) {
        const answer = await http.retried(() => http.send('POST', `/v1/capabilities/${revoked.jti}/revoke`, 'POST /v1/capabilities/{jti}/revoke', tenantAdmin, {}), givingUp);
        if (accepted(answer, 202)) await readAfter(revoked.token, 'capability', clock());
      }
      const kept = await issue();
      const removed = await http.retried(() => http.send('DELETE', `/v1/grants/${grantId}`, 'DELETE /v1/grants/{id}', admin), givingUp);
      if (kept !== undefined && accepted(removed, 202)) await readAfter(kept.token, 'grant', clock());
      await pause(shape.pauseMs * 10);
    }
  };

  const lanes = [
    ...Array.from({ length: shape.syncWriters }, (_, lane) => syncWriter(lane)),
    asyncWriter(), ingestProducer(), searcher(), deleter(), policyChanger(),
  ];
  // A lane that throws (a setup call refused) is reported when the load stops, not as an unhandled rejection.
  const settled = Promise.allSettled(lanes);
  return {
    async stop() {
      running = false;
      stoppedAt = clock();
      const failed = (await settled).filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed.length > 0) throw new Error(`${failed.length} load lane(s) failed: ${failed.map((f) => String(f.reason)).join('; ')}`);
    },
  };
}
