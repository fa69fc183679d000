import { useEffect, useState } from 'preact/hooks';
import { api, ApiProblem, asProblem } from '../api.ts';
import type { OpsOverview, Problem } from '../api-types.ts';
import { OpsChart } from '../components/ops-chart.tsx';
import { ColumnHeads } from '../components/column-heads.tsx';
import { ProblemAlert } from '../components/problem-alert.tsx';
import { Time } from '../components/time.tsx';
import { formatNumber } from '../format.ts';

const POLL_MS = 2_000;

/** The pipeline at a glance (admin), asked again every 2 s while this page is open. */
export function OpsPage() {
  const [overview, setOverview] = useState<OpsOverview | null>(null);
  const [problem, setProblem] = useState<Problem | null>(null);
  const [stopped, setStopped] = useState(false);

  useEffect(() => {
    let left = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const poll = async () => {
      try {
        const next = await api<OpsOverview>('/v1/ops/overview');
        if (left) return;
        setOverview(next);
        setProblem(null);
      } catch (err) {
        if (left) return;
        setProblem(asProblem(err));
        // A refusal stays a refusal: stop asking. An outage may pass: keep asking.
        if (err instanceof ApiProblem && (err.status === 401 || err.status === 403 || err.status === 404)) {
          setStopped(true);
          return;
        }
      }
      timer = setTimeout(() => void poll(), POLL_MS);
    };
    void poll();
    return () => {
      left = true;
      clearTimeout(timer);
    };
  }, []);

  return (
    <section aria-labelledby="ops-heading">
      <h1 id="ops-heading">Operations</h1>
      {problem !== null && (
        <ProblemAlert problem={problem} lead={stopped ? 'The server refused the operations overview; this page stopped asking.' : 'The last overview could not be loaded; retrying every 2 s.'} />
      )}
      {overview === null && problem === null && <p aria-busy="true">Loading the overview…</p>}
      {overview !== null && <OverviewView overview={overview} />}
    </section>
  );
}

function OverviewView({ overview }: { overview: OpsOverview }) {
  return (
    <>
      <p class="muted">As of <Time iso={overview.at} /> (refreshed every 2 s).</p>
      <h2>Counters</h2>
      <dl class="facts counters" data-testid="ops-counters">
        <div><dt>Writes</dt><dd data-testid="counter-writes">{formatNumber(overview.counters.writes)}</dd></div>
        <div><dt>Searches</dt><dd data-testid="counter-searches">{formatNumber(overview.counters.searches)}</dd></div>
        <div><dt>Dead-lettered</dt><dd data-testid="counter-dead-lettered">{formatNumber(overview.counters.deadLettered)}</dd></div>
      </dl>
      <h2>Lag and throughput</h2>
      <OpsChart history={overview.history} />
      <h2>Consumer groups</h2>
      <ConsumersTable consumers={overview.consumers} />
      <h2>Dead letters</h2>
      {overview.deadLetters.length === 0 ? (
        <p>No dead-letter topics.</p>
      ) : (
        <div class="table-wrap">
          <table data-testid="ops-dead-letters">
            <ColumnHeads columns={['Topic', 'Parked messages']} />
            <tbody>
              {overview.deadLetters.map((d) => (
                <tr key={d.topic} data-topic={d.topic} class={d.parked > 0 ? 'warn' : undefined}>
                  <th scope="row"><code>{d.topic}</code></th>
                  <td>{formatNumber(d.parked)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <h2>Sources</h2>
      <ul class="sources" data-testid="ops-sources">
        {overview.sources.map((s) => (
          <li key={s.source} data-source={s.source} data-ok={String(s.ok)} class={s.ok ? 'ok' : 'bad'}>
            <code>{s.source}</code>: {s.ok ? 'reachable' : <strong>unreachable — its numbers are missing from this overview</strong>}
          </li>
        ))}
      </ul>
    </>
  );
}

function ConsumersTable({ consumers }: { consumers: OpsOverview['consumers'] }) {
  if (consumers.length === 0) return <p>No consumer groups reported.</p>;
  return (
    <div class="table-wrap">
      <table data-testid="ops-consumers">
        <ColumnHeads columns={['Group', 'Topic', 'Total lag', 'Lag per partition']} />
        <tbody>
          {consumers.map((c) => (
            <tr key={`${c.group} ${c.topic}`} data-testid="consumer-row" data-group={c.group} data-topic={c.topic}>
              <th scope="row"><code>{c.group}</code></th>
              <td><code>{c.topic}</code></td>
              <td>{formatNumber(c.lag)}</td>
              <td>
                {c.partitions.length === 0 ? '—' : (
                  <ul class="plain inline">
                    {c.partitions.map((p) => <li key={p.partition}>p{p.partition}: {formatNumber(p.lag)}</li>)}
                  </ul>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
