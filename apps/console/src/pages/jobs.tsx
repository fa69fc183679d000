import { useEffect, useRef, useState } from 'preact/hooks';
import { api, asProblem } from '../api.ts';
import { JOB_STATUS_FILTERS, type DeletionJob, type DeletionJobList, type JobStatusFilter, type Problem } from '../api-types.ts';
import { ColumnHeads } from '../components/column-heads.tsx';
import { ProblemAlert } from '../components/problem-alert.tsx';
import { Time } from '../components/time.tsx';
import { hrefOf } from '../router.ts';

type Order = 'newest' | 'oldest';

interface Filter {
  status: JobStatusFilter | '';
  /** ISO instant, or '' for every job. */
  since: string;
  /** One subject's jobs, or '' for every subject. */
  subjectId: string;
  order: Order;
  limit: number;
}

type Listing =
  | { state: 'loading' }
  | { state: 'loaded'; items: DeletionJob[]; nextCursor: string | undefined; more: 'idle' | 'loading' }
  | { state: 'refused'; problem: Problem };

const PAGE_SIZES = [10, 25, 50, 100];
/** The API's id grammar: a subject that is not an id is said here, not sent to be refused. */
const ID = /^(?!\.{1,2}$)[A-Za-z0-9._:@-]{1,128}$/;

const listPath = (filter: Filter, cursor?: string): string => {
  const query = new URLSearchParams();
  if (filter.status !== '') query.set('status', filter.status);
  if (filter.since !== '') query.set('since', filter.since);
  if (filter.subjectId !== '') query.set('subjectId', filter.subjectId);
  query.set('order', filter.order);
  if (cursor !== undefined) query.set('cursor', cursor);
  query.set('limit', String(filter.limit));
  return `/v1/deletion-jobs?${query.toString()}`;
};

/** The tenant's deletion jobs for an administrator, the caller's own otherwise (the server decides which). */
export function JobsPage() {
  const [filter, setFilter] = useState<Filter>({ status: '', since: '', subjectId: '', order: 'newest', limit: 50 });
  const [listing, setListing] = useState<Listing>({ state: 'loading' });
  const [moreProblem, setMoreProblem] = useState<Problem | null>(null);
  // Answers to an earlier filter are dropped: only the latest request may fill the list.
  const generation = useRef(0);

  useEffect(() => {
    const mine = ++generation.current;
    setListing({ state: 'loading' });
    setMoreProblem(null);
    api<DeletionJobList>(listPath(filter)).then(
      (page) => mine === generation.current && setListing({ state: 'loaded', items: page.items, nextCursor: page.nextCursor, more: 'idle' }),
      (err: unknown) => mine === generation.current && setListing({ state: 'refused', problem: asProblem(err) }),
    );
  }, [filter]);

  const loadMore = async () => {
    if (listing.state !== 'loaded' || listing.nextCursor === undefined) return;
    const mine = generation.current;
    setListing({ ...listing, more: 'loading' });
    setMoreProblem(null);
    try {
      const page = await api<DeletionJobList>(listPath(filter, listing.nextCursor));
      if (mine !== generation.current) return;
      setListing({ state: 'loaded', items: [...listing.items, ...page.items], nextCursor: page.nextCursor, more: 'idle' });
    } catch (err) {
      if (mine !== generation.current) return;
      setListing({ ...listing, more: 'idle' });
      setMoreProblem(asProblem(err));
    }
  };

  return (
    <section aria-labelledby="jobs-heading">
      <h1 id="jobs-heading">Deletion jobs</h1>
      <FilterForm filter={filter} onChange={setFilter} />
      <ListingView listing={listing} order={filter.order} />
      {moreProblem !== null && <ProblemAlert problem={moreProblem} lead="The next page could not be loaded." />}
      {listing.state === 'loaded' && listing.nextCursor !== undefined && (
        <button type="button" data-testid="jobs-more" disabled={listing.more === 'loading'} onClick={() => void loadMore()}>
          {listing.more === 'loading' ? 'Loading…' : 'More'}
        </button>
      )}
    </section>
  );
}

/** Changes go through `onChange` as updates of the latest filter: two quick picks never undo each other. */
function FilterForm({ filter, onChange }: { filter: Filter; onChange: (update: (filter: Filter) => Filter) => void }) {
  const [since, setSince] = useState('');
  const [sinceError, setSinceError] = useState<string | null>(null);
  const [subject, setSubject] = useState('');
  const [subjectError, setSubjectError] = useState<string | null>(null);

  /** The typed fields (time, subject) apply together; neither applies while one is wrong. */
  const apply = (event: Event) => {
    event.preventDefault();
    // The field reads as UTC, like every time on these pages (a picker's value has no zone).
    const ms = since === '' ? undefined : Date.parse(/(Z|[+-]\d\d:\d\d)$/i.test(since) ? since : `${since}Z`);
    const sinceOk = ms === undefined || !Number.isNaN(ms);
    const subjectId = subject.trim();
    const subjectOk = subjectId === '' || ID.test(subjectId);
    setSinceError(sinceOk ? null : 'not a date and time');
    setSubjectError(subjectOk ? null : 'not a subject id (letters, digits and . _ : @ - only)');
    if (!sinceOk || !subjectOk) return;
    const iso = ms === undefined ? '' : new Date(ms).toISOString();
    onChange((f) => ({ ...f, since: iso, subjectId }));
  };

  const pickStatus = (value: string) => onChange((f) => ({ ...f, status: JOB_STATUS_FILTERS.find((s) => s === value) ?? '' }));
  const pickLimit = (value: string) => onChange((f) => ({ ...f, limit: PAGE_SIZES.find((n) => String(n) === value) ?? 50 }));
  const pickOrder = (value: string) => onChange((f) => ({ ...f, order: value === 'oldest' ? 'oldest' : 'newest' }));

  return (
    <form class="filters" onSubmit={apply}>
      <div>
        <label for="job-status-filter">Status</label>
        <select id="job-status-filter" data-testid="status-filter" value={filter.status} onChange={(e) => pickStatus(e.currentTarget.value)}>
          <option value="">any</option>
          {JOB_STATUS_FILTERS.map((s) => <option key={s} value={s}>{s}</option>)}
        </select>
      </div>
      <div>
        <label for="job-order">Order</label>
        <select id="job-order" data-testid="order-filter" value={filter.order} onChange={(e) => pickOrder(e.currentTarget.value)}>
          <option value="newest">newest first</option>
          <option value="oldest">oldest first</option>
        </select>
      </div>
      <div>
        <label for="job-subject">Subject</label>
        <input
          id="job-subject" data-testid="subject-filter" type="text" value={subject} placeholder="any subject" autocomplete="off" spellcheck={false}
          onInput={(e) => setSubject(e.currentTarget.value)} aria-invalid={subjectError !== null}
        />
        {subjectError !== null && <span class="field-error">{subjectError}</span>}
      </div>
      <div>
        <label for="job-since">Requested since (UTC)</label>
        <input
          id="job-since" data-testid="since-filter" type="datetime-local" step={1} value={since}
          onInput={(e) => setSince(e.currentTarget.value)} aria-invalid={sinceError !== null}
        />
        {sinceError !== null && <span class="field-error">{sinceError}</span>}
      </div>
      <div>
        <label for="job-limit">Page size</label>
        <select id="job-limit" data-testid="limit-filter" value={String(filter.limit)} onChange={(e) => pickLimit(e.currentTarget.value)}>
          {PAGE_SIZES.map((n) => <option key={n} value={String(n)}>{n}</option>)}
        </select>
      </div>
      <div>
        <button type="submit" data-testid="apply-filter">Apply</button>
      </div>
    </form>
  );
}

function ListingView({ listing, order }: { listing: Listing; order: Order }) {
  if (listing.state === 'loading') return <p aria-busy="true">Loading deletion jobs…</p>;
  if (listing.state === 'refused') return <ProblemAlert problem={listing.problem} lead="The server refused the deletion jobs." />;
  if (listing.items.length === 0) {
    // The server reads a bounded stretch of the tenant's jobs per answer: a rare match may lie further on.
    return listing.nextCursor === undefined
      ? <p data-testid="jobs-empty">No deletion jobs match.</p>
      : <p data-testid="jobs-empty">No deletion jobs match among those read so far; <strong>More</strong> reads on.</p>;
  }
  return (
    <div class="table-wrap">
      <table data-testid="jobs">
        <caption>{listing.items.length} deletion {listing.items.length === 1 ? 'job' : 'jobs'}, {order} first; times in UTC</caption>
        <ColumnHeads columns={['Job', 'Status', 'Mode', 'Subject', 'Records', 'Requested by', 'Requested (UTC)', 'Updated (UTC)']} />
        <tbody>
          {listing.items.map((job) => (
            <tr key={job.jobId} data-testid="job-row" data-job-id={job.jobId}>
              <th scope="row"><a href={hrefOf({ page: 'job', jobId: job.jobId })}><code>{job.jobId}</code></a></th>
              <td><span class={`badge status-${job.status}`} data-testid="job-status">{job.status}</span></td>
              <td>{job.mode}</td>
              <td data-testid="job-subject"><code>{job.subjectId}</code></td>
              <td>{job.recordIds.length}</td>
              <td>agent <code>{job.requestedBy.agentId}</code> for <code>{job.requestedBy.principalId}</code></td>
              <td><Time iso={job.requestedAt} /></td>
              <td><Time iso={job.updatedAt} /></td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
