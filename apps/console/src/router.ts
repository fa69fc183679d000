import { useEffect, useState } from 'preact/hooks';

/**
 * Hash routes name pages only (and a job id, which is not content): no record content, query
 * text or capability ever reaches the URL, the history or a Referer.
 */
export type Route =
  | { page: 'home' }
  | { page: 'review' }
  | { page: 'jobs' }
  | { page: 'job'; jobId: string }
  | { page: 'ops' }
  | { page: 'unknown' };

const ID = /^(?!\.{1,2}$)[A-Za-z0-9._:@-]{1,128}$/;

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, '');
  if (path === '' || path === '/') return { page: 'home' };
  if (path === '/review') return { page: 'review' };
  if (path === '/jobs') return { page: 'jobs' };
  if (path === '/ops') return { page: 'ops' };
  const job = /^\/jobs\/([^/]+)$/.exec(path);
  if (job?.[1] !== undefined) {
    const jobId = safeDecode(job[1]);
    if (jobId !== null && ID.test(jobId)) return { page: 'job', jobId };
  }
  return { page: 'unknown' };
}

function safeDecode(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}

export const hrefOf = (route: Exclude<Route, { page: 'unknown' }>): string =>
  route.page === 'job' ? `#/jobs/${encodeURIComponent(route.jobId)}` : route.page === 'home' ? '#/' : `#/${route.page}`;

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const update = () => setRoute(parseRoute(location.hash));
    window.addEventListener('hashchange', update);
    return () => window.removeEventListener('hashchange', update);
  }, []);
  return route;
}
