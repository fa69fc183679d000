import { useCallback, useEffect, useState } from 'preact/hooks';
import { api, ApiProblem, asProblem, encodeId } from '../api.ts';
import { VISIBILITIES, type MemoryRecord, type MutationResponse, type Problem, type QuarantineList, type Visibility } from '../api-types.ts';
import { ColumnHeads } from '../components/column-heads.tsx';
import { ProblemAlert } from '../components/problem-alert.tsx';
import { Time } from '../components/time.tsx';

type Queue = { state: 'loading' } | { state: 'loaded'; items: MemoryRecord[] } | { state: 'refused'; problem: Problem };

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

const fetchQueue = () => api<QuarantineList>('/v1/review/quarantine');

export function ReviewPage() {
  const [queue, setQueue] = useState<Queue>({ state: 'loading' });
  const [status, setStatus] = useState('');
  const [refusal, setRefusal] = useState<Refusal | null>(null);
  const [busy, setBusy] = useState<string | null>(null);

  const reload = useCallback(async (): Promise<MemoryRecord[] | null> => {
    try {
      const { items } = await fetchQueue();
      setQueue({ state: 'loaded', items });
      return items;
    } catch (err) {
      setQueue({ state: 'refused', problem: asProblem(err) });
      return null;
    }
  }, []);

  useEffect(() => {
    void reload();
  }, [reload]);

  const decide = async (record: MemoryRecord, decision: 'promote' | 'reject', visibility: Visibility) => {
    setBusy(record.id);
    setRefusal(null);
    setStatus(`${decision === 'promote' ? 'Promoting' : 'Rejecting'} ${record.id} (version ${record.version})…`);
    const body = decision === 'promote' && visibility !== record.visibility
      ? { expectedVersion: record.version, visibility }
      : { expectedVersion: record.version };
    try {
      const done = await api<MutationResponse>(`/v1/memories/${encodeId(record.id)}/${decision}`, { method: 'POST', body });
      setStatus(`${decision === 'promote' ? 'Promoted' : 'Rejected'} ${done.id}: now version ${done.version}, ${done.status}.`);
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
      <p>Quarantined memories in the partitions your capability may review. Promoting makes one searchable; rejecting tombstones it.</p>
      <p class="status" role="status" aria-live="polite" data-testid="review-status">{status}</p>
      {refusal !== null && (
        <ProblemAlert problem={refusal.problem} {...(refusal.lead === undefined ? {} : { lead: refusal.lead })}>
          {refusal.conflict !== undefined && <ConflictDetail conflict={refusal.conflict} />}
        </ProblemAlert>
      )}
      <QueueView queue={queue} busy={busy} onDecide={decide} />
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
  onDecide: (record: MemoryRecord, decision: 'promote' | 'reject', visibility: Visibility) => void;
}

function QueueView({ queue, busy, onDecide }: QueueProps) {
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
  if (queue.items.length === 0) return <p data-testid="queue-empty">No quarantined memories in your partitions</p>;
  return (
    <div class="table-wrap">
      <table data-testid="queue">
        <caption>{queue.items.length} quarantined {queue.items.length === 1 ? 'memory' : 'memories'}, oldest first</caption>
        <ColumnHeads columns={['Content', 'Kind', 'Provenance', 'Trust', 'Written by', 'Created', 'Version', 'Decision']} />
        <tbody>
          {queue.items.map((record) => (
            <QueueRow key={`${record.id}@${record.version}`} record={record} busy={busy === record.id} onDecide={onDecide} />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function QueueRow({ record, busy, onDecide }: { record: MemoryRecord; busy: boolean; onDecide: QueueProps['onDecide'] }) {
  const [visibility, setVisibility] = useState<Visibility>(record.visibility);
  const selectId = `visibility-${record.id}`;
  const pick = (value: string) => {
    const chosen = VISIBILITIES.find((v) => v === value);
    if (chosen !== undefined) setVisibility(chosen);
  };
  return (
    <tr data-testid="queue-row" data-record-id={record.id} data-version={record.version}>
      <td class="content">
        {record.content}
        <div class="muted small">
          <code>{record.id}</code> · subject <code>{record.subjectId}</code> · {record.resource.kind}:{record.resource.id} · {record.sensitivity}
        </div>
      </td>
      <td>{record.kind}</td>
      <td>
        <ul class="plain">
          {record.provenance.map((p, i) => (
            <li key={i}>
              {p.source}
              {p.uri !== undefined && <> · <span class="break">{p.uri}</span></>}
              {' · '}
              <Time iso={p.observedAt} />
            </li>
          ))}
        </ul>
      </td>
      <td>{record.trust} ({record.confidence})</td>
      <td>
        agent <code>{record.agentId}</code>
        <br />
        owner <code>{record.owner.principalId}</code> ({record.owner.kind})
      </td>
      <td><Time iso={record.createdAt} /></td>
      <td>{record.version}</td>
      <td>
        <div class="decision">
          <label for={selectId}>Visibility</label>
          <select id={selectId} data-testid="visibility" value={visibility} onChange={(e) => pick(e.currentTarget.value)}>
            {VISIBILITIES.map((v) => (
              <option key={v} value={v}>{v}{v === record.visibility ? ' (current)' : ''}</option>
            ))}
          </select>
          <button type="button" data-testid="promote" aria-label={`Promote ${record.id}`} disabled={busy} onClick={() => onDecide(record, 'promote', visibility)}>Promote</button>
          <button type="button" data-testid="reject" class="secondary" aria-label={`Reject ${record.id}`} disabled={busy} onClick={() => onDecide(record, 'reject', visibility)}>Reject</button>
        </div>
      </td>
    </tr>
  );
}
