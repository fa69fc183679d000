import { useEffect, useRef, useState } from 'preact/hooks';
import { api, asProblem } from '../api.ts';
import { JOB_STATUS_FILTERS, type DeletionJob, type DeletionJobList, type JobStatusFilter, type Problem } from '../api-types.ts';
import { ColumnHeads } from '../components/column-heads.tsx';
import { ProblemAlert } from '../components/problem-alert.tsx';
import { Time } from '../components/time.tsx';
import { hrefOf } from '../router.ts';

interface Filter {
  status: JobStatusFilter | '';
  /** ISO instant, or '' for every job. */
  since: string;
  limit: number;
}

type Listing =
  | { state: 'loading' }
  | { state: 'loaded'; items: DeletionJob[]; nextCursor: string | undefined; more: 'idle' | 'loading' }
  | { state: 'refused'; problem: Problem };

const PAGE_SIZES = [10, 25, 50, 100];

const listPath = (filter: Filter, cursor?: string): string => {
  const query = new URLSearchParams();
  if (filter.status !== '') query.set('status', filter.status);
  if (filter.since !== '') query.set('since', filter.since);
  if (cursor !== undefined) query.set('cursor', cursor);
  query.set('limit', String(filter.limit));
  return `/v1/deletion-jobs?${query.toString()}`;
};

/** The tenant's deletion jobs for an administrator, the caller's own otherwise (the server decides which). */
export function JobsPage() {
  const [filter, setFilter] = useState<Filter>({ status: '', since: '', limit: 50 });
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
      <ListingView listing={listing} />
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

  const apply = (event: Event) => {
    event.preventDefault();
    if (since === '') {
      setSinceError(null);
      onChange((f) => ({ ...f, since: '' }));
      return;
    }
    const ms = Date.parse(since);
    if (Number.isNaN(ms)) {
      setSinceError('not a date and time');
      return;
    }
    setSinceError(null);
    const iso = new Date(ms).toISOString();
    onChange((f) => ({ ...f, since: iso }));
  };

  const pickStatus = (value: string) => onChange((f) => ({ ...f, status: JOB_STATUS_FILTERS.find((s) => s === value) ?? '' }));
  const pickLimit = (value: string) => onChange((f) => ({ ...f, limit: PAGE_SIZES.find((n) => String(n) === value) ?? 50 }));

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
        <label for="job-since">Requested since</label>
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

function ListingView({ listing }: { listing: Listing }) {
  if (listing.state === 'loading') return <p aria-busy="true">Loading deletion jobs…</p>;
  if (listing.state === 'refused') return <ProblemAlert problem={listing.problem} lead="The server refused the deletion jobs." />;
  if (listing.items.length === 0) return <p data-testid="jobs-empty">No deletion jobs match.</p>;
  return (
    <div class="table-wrap">
      <table data-testid="jobs">
        <caption>{listing.items.length} deletion {listing.items.length === 1 ? 'job' : 'jobs'}, oldest first</caption>
        <ColumnHeads columns={['Job', 'Status', 'Mode', 'Subject', 'Records', 'Requested by', 'Requested', 'Updated']} />
        <tbody>
          {listing.items.map((job) => (
            <tr key={job.jobId} data-testid="job-row" data-job-id={job.jobId}>
              <th scope="row"><a href={hrefOf({ page: 'job', jobId: job.jobId })}><code>{job.jobId}</code></a></th>
              <td><span class={`badge status-${job.status}`} data-testid="job-status">{job.status}</span></td>
              <td>{job.mode}</td>
              <td><code>{job.subjectId}</code></td>
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
