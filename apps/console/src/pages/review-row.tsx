import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, asProblem } from '../api.ts';
import {
  REJECTION_REASON_CODES, REJECTION_REASONS, VISIBILITIES,
  type EvidencePacket, type MemoryRecord, type Problem, type QuarantineList, type RejectionReason, type Visibility,
} from '../api-types.ts';
import { Time } from '../components/time.tsx';
import { formatRelative, formatTime } from '../format.ts';
import { instructionFlags, type InstructionFlag } from '../instruction-flags.ts';

/** The API's longest search query (LIMITS.maxQueryLength, @gm/contracts: the console bundles none of its code). */
const MAX_QUERY_LENGTH = 1024;

export type Decision = { decision: 'promote'; visibility: Visibility } | { decision: 'reject'; reason: RejectionReason };

export interface RowProps {
  record: MemoryRecord;
  busy: boolean;
  /** The capability may search: the subject's active records can be shown. */
  canSearch: boolean;
  now: number;
  onDecide: (record: MemoryRecord, decision: Decision) => void;
}

/** A DOM id from a record id (ids may hold `.`, `:` and `@`, which are fine in an id but not in every selector). */
const domId = (prefix: string, id: string) => `${prefix}-${id.replace(/[^A-Za-z0-9_-]/g, (c) => `_${c.charCodeAt(0).toString(16)}`)}`;

export function QueueRow({ record, busy, canSearch, now, onDecide }: RowProps) {
  const flags = useMemo(() => instructionFlags(record.content), [record.content]);
  const [visibility, setVisibility] = useState<Visibility>(record.visibility);
  const [reason, setReason] = useState<RejectionReason | ''>(flags.length > 0 ? 'injected-instruction' : '');
  const [needReason, setNeedReason] = useState(false);
  const selectId = domId('visibility', record.id);
  const reasonId = domId('reason', record.id);
  const pick = (value: string) => {
    const chosen = VISIBILITIES.find((v) => v === value);
    if (chosen !== undefined) setVisibility(chosen);
  };
  const pickReason = (value: string) => {
    setReason(REJECTION_REASON_CODES.find((r) => r === value) ?? '');
    setNeedReason(false);
  };
  const reject = () => {
    if (reason === '') {
      setNeedReason(true);
      document.getElementById(reasonId)?.focus();
      return;
    }
    onDecide(record, { decision: 'reject', reason });
  };
  return (
    <tr data-testid="queue-row" data-record-id={record.id} data-version={record.version} data-flagged={flags.length > 0} class={flags.length > 0 ? 'warn' : undefined}>
      <td class="content">
        <Flags flags={flags} recordId={record.id} />
        <span data-testid="content">{record.content}</span>
        <div class="muted small">
          <code>{record.id}</code> · subject <code>{record.subjectId}</code> · {record.resource.kind}:{record.resource.id} · {record.sensitivity}
        </div>
        <div class="small" data-testid="purposes">
          purposes {record.purposes.map((p, i) => <span key={p}>{i > 0 && ', '}<code>{p}</code></span>)}
        </div>
        <SubjectRecords record={record} canSearch={canSearch} />
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
      <td>
        {record.trust}
        <div class="small" data-testid="confidence" title="Set by the writer when it wrote the memory (0.5 when it gave none), not checked by anyone; it weighs a quarter of a search's ranking once promoted.">
          confidence {record.confidence} (writer's own estimate)
        </div>
      </td>
      <td>
        agent <code>{record.agentId}</code>
        <br />
        owner <code>{record.owner.principalId}</code> ({record.owner.kind})
      </td>
      <td><Time iso={record.createdAt} /></td>
      <td data-testid="expires">
        <time dateTime={record.expiresAt}>{formatTime(record.expiresAt)}</time>
        <div class="small muted">{formatRelative(record.expiresAt, now)}</div>
      </td>
      <td>{record.version}</td>
      <td>
        <div class="decision">
          <label for={selectId}>Visibility</label>
          <select id={selectId} data-testid="visibility" value={visibility} onChange={(e) => pick(e.currentTarget.value)}>
            {VISIBILITIES.map((v) => (
              <option key={v} value={v}>{v}{v === record.visibility ? ' (current)' : ''}</option>
            ))}
          </select>
          <button type="button" data-testid="promote" aria-label={`Promote ${record.id}`} disabled={busy} onClick={() => onDecide(record, { decision: 'promote', visibility })}>Promote</button>
          <label for={reasonId}>Reason to reject</label>
          <select id={reasonId} data-testid="reject-reason" value={reason} aria-invalid={needReason} onChange={(e) => pickReason(e.currentTarget.value)}>
            <option value="">choose…</option>
            {REJECTION_REASON_CODES.map((r) => (
              <option key={r} value={r} title={REJECTION_REASONS[r]}>{r}</option>
            ))}
          </select>
          {reason !== '' && <span class="small muted" data-testid="reason-meaning">{REJECTION_REASONS[reason]}</span>}
          {needReason && <span class="field-error" role="alert">Choose why: the reason is kept in its history.</span>}
          <button type="button" data-testid="reject" class="secondary" aria-label={`Reject ${record.id}`} disabled={busy} onClick={reject}>Reject</button>
        </div>
      </td>
    </tr>
  );
}

/** Each flag names its rule; the rule's explanation is its tooltip and its accessible description. */
function Flags({ flags, recordId }: { flags: InstructionFlag[]; recordId: string }) {
  if (flags.length === 0) return null;
  return (
    <ul class="plain flags" data-testid="flags" aria-label="Reads like an instruction to the agent">
      {flags.map((flag) => {
        const describedBy = domId(`flag-${flag.rule}`, recordId);
        return (
          <li key={flag.rule} class="flag" data-testid="flag" data-rule={flag.rule} title={flag.explanation} aria-describedby={describedBy} tabIndex={0}>
            ⚠ {flag.rule} <span class="muted">“{flag.evidence}”</span>
            <span id={describedBy} class="visually-hidden">{flag.explanation}</span>
          </li>
        );
      })}
    </ul>
  );
}

type Loaded<T> = { state: 'loading' } | { state: 'loaded'; value: T } | { state: 'refused'; problem: Problem };

/**
 * The subject's other records this reviewer may see, through calls its capability is granted:
 * the subject's other queued writes (the queue, `review`), and its active records that share
 * this write's words (a lexical search confined to the subject, `search`). Nothing else: a
 * refusal is shown as the server's answer.
 */
function SubjectRecords({ record, canSearch }: { record: MemoryRecord; canSearch: boolean }) {
  const [queued, setQueued] = useState<Loaded<MemoryRecord[]>>({ state: 'loading' });
  const [active, setActive] = useState<Loaded<EvidencePacket['items']>>({ state: 'loading' });
  // Asked for when the reviewer opens it: two requests for every row of a long queue would spend
  // the reviewer's rate limit, and each search leaves an audit line and an evidence packet.
  const [opened, setOpened] = useState(false);
  useEffect(() => {
    if (!opened) return undefined;
    setQueued({ state: 'loading' });
    setActive({ state: 'loading' });
    let live = true;
    api<QuarantineList>(`/v1/review/quarantine?subjectId=${encodeURIComponent(record.subjectId)}`)
      .then(({ items }) => live && setQueued({ state: 'loaded', value: items.filter((r) => r.id !== record.id) }))
      .catch((err: unknown) => live && setQueued({ state: 'refused', problem: asProblem(err) }));
    if (canSearch) {
      const body = { query: record.content.slice(0, MAX_QUERY_LENGTH), subjectId: record.subjectId, mode: 'lexical', limit: 5 };
      api<EvidencePacket>('/v1/search', { method: 'POST', body })
        .then(({ items }) => live && setActive({ state: 'loaded', value: items }))
        .catch((err: unknown) => live && setActive({ state: 'refused', problem: asProblem(err) }));
    }
    return () => {
      live = false;
    };
  }, [opened, record.id, record.subjectId, record.content, canSearch]);

  return (
    <details class="small subject-records" data-testid="subject-records" open={opened}>
      <summary onClick={(e) => { e.preventDefault(); setOpened(!opened); }}>Other records of subject <code>{record.subjectId}</code></summary>
      <p class="muted">Queued for review:</p>
      {queued.state === 'loading' && <p aria-busy="true">…</p>}
      {queued.state === 'refused' && <p data-testid="subject-queued-refused">The queue refused: <code>{queued.problem.code}</code></p>}
      {queued.state === 'loaded' && (queued.value.length === 0
        ? <p data-testid="subject-queued-none">none</p>
        : (
          <ul data-testid="subject-queued">
            {queued.value.map((r) => <li key={r.id} data-record-id={r.id}><code>{r.id}</code>: {r.content}</li>)}
          </ul>
        ))}
      <p class="muted">Active, sharing this write's words:</p>
      {!canSearch && <p data-testid="subject-active-unavailable">Not shown: this capability has no <code>search</code> action.</p>}
      {canSearch && active.state === 'loading' && <p aria-busy="true">…</p>}
      {canSearch && active.state === 'refused' && <p data-testid="subject-active-refused">The search refused: <code>{active.problem.code}</code></p>}
      {canSearch && active.state === 'loaded' && (active.value.length === 0
        ? <p data-testid="subject-active-none">none this capability may see</p>
        : (
          <ul data-testid="subject-active">
            {active.value.map((item) => <li key={item.recordId} data-record-id={item.recordId}><code>{item.recordId}</code>: {item.excerpt}</li>)}
          </ul>
        ))}
    </details>
  );
}
