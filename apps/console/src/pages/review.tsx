import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, ApiProblem, asProblem, encodeId } from '../api.ts';
import type { MemoryRecord, MutationResponse, Problem, QuarantineList } from '../api-types.ts';
import { ColumnHeads } from '../components/column-heads.tsx';
import { ProblemAlert } from '../components/problem-alert.tsx';
import { instructionFlags } from '../instruction-flags.ts';
import { currentSession } from '../session.ts';
import { QueueRow, type Decision, type RowProps } from './review-row.tsx';

type Queue =
  | { state: 'loading' }
  | { state: 'loaded'; items: MemoryRecord[]; subjectId: string | undefined }
  | { state: 'refused'; problem: Problem };

/** What the last promotion or rejection answered, when it was not a success. */
interface Refusal {
  problem: Problem;
  lead?: string;
  conflict?: Conflict;
}

/** A 409: the version reviewed is not the current one; the current one, where this capability may see it. */
interface Conflict {
  id: string;
  reviewedVersion: number;
  current: Pick<MemoryRecord, 'version' | 'status' | 'content'> | null;
  lookup?: Problem;
}

const SELF_PROMOTION = 'You wrote this memory: another reviewer must promote it';

/** The queue, or one subject's part of it: the server filters, under the same authorization. */
const fetchQueue = (subjectId: string | undefined) =>
  api<QuarantineList>(subjectId === undefined ? '/v1/review/quarantine' : `/v1/review/quarantine?subjectId=${encodeURIComponent(subjectId)}`);

export function ReviewPage() {
  const [queue, setQueue] = useState<Queue>({ state: 'loading' });
  const [status, setStatus] = useState('');
  const [refusal, setRefusal] = useState<Refusal | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [subjectInput, setSubjectInput] = useState('');
  const [subjectId, setSubjectId] = useState<string | undefined>(undefined);
  const canSearch = currentSession()?.view.actions.includes('search') ?? false;

  const reload = useCallback(async (): Promise<MemoryRecord[] | null> => {
    try {
      const { items } = await fetchQueue(subjectId);
      setQueue({ state: 'loaded', items, subjectId });
      return items;
    } catch (err) {
      setQueue({ state: 'refused', problem: asProblem(err) });
      return null;
    }
  }, [subjectId]);

  useEffect(() => {
    void reload();
  }, [reload]);

  const filter = (e: Event) => {
    e.preventDefault();
    const trimmed = subjectInput.trim();
    const wanted = trimmed === '' ? undefined : trimmed;
    if (wanted === subjectId) void reload();
    else setSubjectId(wanted);
  };

  const decide = async (record: MemoryRecord, chosen: Decision) => {
    const { decision } = chosen;
    setBusy(record.id);
    setRefusal(null);
    setStatus(`${decision === 'promote' ? 'Promoting' : 'Rejecting'} ${record.id} (version ${record.version})…`);
    const body = chosen.decision === 'reject'
      ? { expectedVersion: record.version, reason: chosen.reason }
      : chosen.visibility !== record.visibility ? { expectedVersion: record.version, visibility: chosen.visibility } : { expectedVersion: record.version };
    try {
      const done = await api<MutationResponse>(`/v1/memories/${encodeId(record.id)}/${decision}`, { method: 'POST', body });
      setStatus(chosen.decision === 'promote'
        ? `Promoted ${done.id}: now version ${done.version}, ${done.status}.`
        : `Rejected ${done.id} as ${chosen.reason}: now version ${done.version}, ${done.status}.`);
      await reload();
    } catch (err) {
      const problem = asProblem(err);
      setStatus(`${decision === 'promote' ? 'Promotion' : 'Rejection'} of ${record.id} refused: ${problem.code}.`);
      if (err instanceof ApiProblem && err.status === 409) {
        setRefusal({ problem, conflict: await currentVersion(record, reload) });
      } else {
        setRefusal({ problem, ...(problem.code === 'MEM_SELF_PROMOTION' ? { lead: SELF_PROMOTION } : {}) });
        if (err instanceof ApiProblem && err.status === 404) await reload();
      }
    } finally {
      setBusy(null);
    }
  };

  return (
    <section aria-labelledby="review-heading">
      <h1 id="review-heading">Review queue</h1>
      <p>
        Quarantined memories in the partitions your capability may review. Promoting makes one searchable; rejecting tombstones it, and its
        history keeps the reason you choose. A flag marks content that reads like an instruction to the agent (hover it for the rule): a hint, not a verdict.
      </p>
      <div class="filters">
        <form role="search" aria-label="Filter the queue by subject" onSubmit={filter} data-testid="subject-filter">
          <div class="stack">
            <label for="subject-filter-input">Subject</label>
            <input id="subject-filter-input" data-testid="subject-input" value={subjectInput} placeholder="every subject" autocomplete="off"
              onInput={(e) => setSubjectInput(e.currentTarget.value)} />
          </div>
          <button type="submit" data-testid="subject-apply">Filter</button>
        </form>
      </div>
      <p class="status" role="status" aria-live="polite" data-testid="review-status">{status}</p>
      {refusal !== null && (
        <ProblemAlert problem={refusal.problem} {...(refusal.lead === undefined ? {} : { lead: refusal.lead })}>
          {refusal.conflict !== undefined && <ConflictDetail conflict={refusal.conflict} />}
        </ProblemAlert>
      )}
      <QueueView queue={queue} busy={busy} canSearch={canSearch} onDecide={decide} />
    </section>
  );
}

/**
 * The record as it is now. `GET /v1/memories/{id}` answers active and superseded records only,
 * so a record still in quarantine (a newer write) is found in the refreshed queue instead.
 */
async function currentVersion(record: MemoryRecord, reload: () => Promise<MemoryRecord[] | null>): Promise<Conflict> {
  const [byId, queue] = await Promise.allSettled([api<MemoryRecord>(`/v1/memories/${encodeId(record.id)}`), reload()]);
  const conflict: Conflict = { id: record.id, reviewedVersion: record.version, current: null };
  if (byId.status === 'fulfilled') return { ...conflict, current: byId.value };
  const queued = queue.status === 'fulfilled' ? queue.value?.find((item) => item.id === record.id) : undefined;
  if (queued !== undefined) return { ...conflict, current: queued };
  return { ...conflict, lookup: asProblem(byId.reason) };
}

function ConflictDetail({ conflict }: { conflict: Conflict }) {
  return (
    <div class="conflict" data-testid="conflict" data-record-id={conflict.id} data-current-version={conflict.current?.version}>
      <p>
        You reviewed version {conflict.reviewedVersion} of <code>{conflict.id}</code>, which changed since.
      </p>
      {conflict.current !== null ? (
        <>
          <p>
            It is now at <strong data-testid="conflict-version">version {conflict.current.version}</strong> ({conflict.current.status}), reading:
          </p>
          <blockquote class="content" data-testid="conflict-content">{conflict.current.content}</blockquote>
        </>
      ) : (
        <p>
          The current version is not readable with this capability
          {conflict.lookup !== undefined && <> (<code>{conflict.lookup.code}</code>: {conflict.lookup.title})</>}.
        </p>
      )}
      <p>The queue below shows what is in quarantine now; review again from there.</p>
    </div>
  );
}

interface QueueProps {
  queue: Queue;
  busy: string | null;
  canSearch: boolean;
  onDecide: RowProps['onDecide'];
}

function QueueView({ queue, busy, canSearch, onDecide }: QueueProps) {
  if (queue.state === 'loading') return <p aria-busy="true">Loading the queue…</p>;
  if (queue.state === 'refused') {
    const refused = queue.problem.status === 401 || queue.problem.status === 403;
    return (
      <ProblemAlert
        problem={queue.problem}
        lead={refused ? 'The server refused the review queue to this capability: reviewing needs the "review" action and a reviewer grant on the partitions.' : 'The review queue could not be loaded.'}
      />
    );
  }
  if (queue.items.length === 0) {
    return <p data-testid="queue-empty">{queue.subjectId === undefined ? 'No quarantined memories in your partitions' : `No quarantined memories of subject ${queue.subjectId} in your partitions`}</p>;
  }
  const now = Date.now();
  const flagged = queue.items.filter((r) => instructionFlags(r.content).length > 0).length;
  return (
    <div class="table-wrap">
      <table data-testid="queue">
        <caption>
          {queue.items.length} quarantined {queue.items.length === 1 ? 'memory' : 'memories'}
          {queue.subjectId !== undefined && <> of subject <code>{queue.subjectId}</code></>}, oldest first
          {flagged > 0 && <>; <strong data-testid="flagged-count">{flagged} read{flagged === 1 ? 's' : ''} like an instruction to the agent</strong></>}
        </caption>
        <ColumnHeads columns={['Content', 'Kind', 'Provenance', 'Trust', 'Written by', 'Created', 'Expires', 'Version', 'Decision']} />
        <tbody>
          {queue.items.map((record) => (
            <QueueRow key={`${record.id}@${record.version}`} record={record} busy={busy === record.id} canSearch={canSearch} now={now} onDecide={onDecide} />
          ))}
        </tbody>
      </table>
    </div>
  );
}
