import { useEffect, useState } from 'preact/hooks';
import { hasAction, type CapabilityView } from './capability.ts';
import { formatEpochSeconds } from './format.ts';
import { JobDetailPage } from './pages/job-detail.tsx';
import { JobsPage } from './pages/jobs.tsx';
import { OpsPage } from './pages/ops.tsx';
import { ReviewPage } from './pages/review.tsx';
import { SignInPage } from './pages/sign-in.tsx';
import { hrefOf, useRoute, type Route } from './router.ts';
import { currentSession, onSessionChange, signOut, type Session } from './session.ts';

type Page = 'review' | 'jobs' | 'ops';

/**
 * Which pages the capability's actions suggest. A suggestion only: the server decides every
 * request, and a page reached by its address shows the server's answer, refusals included.
 */
function pagesFor(view: CapabilityView): Page[] {
  const pages: Page[] = [];
  if (hasAction(view, 'review')) pages.push('review');
  pages.push('jobs');
  if (hasAction(view, 'admin')) pages.push('ops');
  return pages;
}

const LABELS: Record<Page, string> = { review: 'Review queue', jobs: 'Deletion jobs', ops: 'Operations' };

function useSession(): Session | null {
  const [session, setSession] = useState(currentSession);
  useEffect(() => onSessionChange(() => setSession(currentSession())), []);
  return session;
}

export function App() {
  const session = useSession();
  const route = useRoute();
  if (session === null) {
    return (
      <main id="main">
        <SignInPage />
      </main>
    );
  }
  const pages = pagesFor(session.view);
  // The landing route is the first page the capability suggests, at the same place in the tree
  // as that page's own route: following its nav link keeps the page (no second load).
  const shown: Route = route.page === 'home' ? { page: pages[0] ?? 'jobs' } : route;
  const active: Page | null = shown.page === 'job' ? 'jobs' : shown.page === 'review' || shown.page === 'jobs' || shown.page === 'ops' ? shown.page : null;
  return (
    <>
      <header class="bar">
        <nav aria-label="Console">
          <ul>
            {pages.map((page) => (
              <li key={page}>
                <a href={hrefOf({ page })} data-testid={`nav-${page}`} aria-current={active === page ? 'page' : undefined}>{LABELS[page]}</a>
              </li>
            ))}
          </ul>
        </nav>
        <CapabilitySummary view={session.view} />
      </header>
      <main id="main">
        <RoutedPage route={shown} first={pages[0] ?? 'jobs'} />
      </main>
    </>
  );
}

function RoutedPage({ route, first }: { route: Route; first: Page }) {
  switch (route.page) {
    case 'review':
      return <ReviewPage />;
    case 'jobs':
      return <JobsPage />;
    case 'job':
      return <JobDetailPage key={route.jobId} jobId={route.jobId} />;
    case 'ops':
      return <OpsPage />;
    case 'home':
      // App resolves the landing route before it gets here; the URL is never rewritten.
      return <RoutedPage route={{ page: first }} first={first} />;
    case 'unknown':
      return (
        <section>
          <h1>Not a page</h1>
          <p>This console has no such page. <a href={hrefOf({ page: first })}>Go to {LABELS[first]}</a>.</p>
        </section>
      );
    default: {
      const never: never = route;
      return never;
    }
  }
}

function CapabilitySummary({ view }: { view: CapabilityView }) {
  const expired = view.exp * 1000 <= Date.now();
  return (
    <section class="capability" aria-label="Signed-in capability (claims decoded, not verified)">
      <dl data-testid="capability-summary">
        <div><dt>Tenant</dt><dd data-testid="cap-tenant">{view.tenant}</dd></div>
        <div><dt>Agent</dt><dd data-testid="cap-agent">{view.agentId}</dd></div>
        <div><dt>Principal</dt><dd data-testid="cap-principal">{view.principal.id} ({view.principal.kind})</dd></div>
        <div><dt>Purpose</dt><dd data-testid="cap-purpose">{view.purpose}</dd></div>
        <div><dt>Actions</dt><dd data-testid="cap-actions">{view.actions.join(', ')}</dd></div>
        {view.scopes.length > 0 && <div><dt>Scopes</dt><dd>{view.scopes.join(', ')}</dd></div>}
        <div>
          <dt>Expires</dt>
          <dd data-testid="cap-exp">
            <time dateTime={new Date(view.exp * 1000).toISOString()}>{formatEpochSeconds(view.exp)}</time>
            {expired && <strong> (past, by this browser's clock: the server's clock decides)</strong>}
          </dd>
        </div>
      </dl>
      <button type="button" data-testid="sign-out" onClick={() => { signOut(); location.replace('#/'); }}>Sign out</button>
    </section>
  );
}
