/**
 * `pnpm bench:soak`: a long run at full write throughput against the real entry point, to show
 * that the runtime neither crashes, nor errs, nor grows under sustained load (docs/pipeline.md). Not a
 * test: no thresholds, numbers only.
 *
 *   pnpm bench:soak [--minutes 20] [--concurrency 8] [--search-every 10] [--records 20000] [--runtime embedded|distributed]
 *
 * The embedded runtime runs as `pnpm start` does (its own process, no V8 flags); the distributed
 * one as its eight service processes. Every minute it prints writes/s, searches/s, errors and the
 * RSS of every process; at the end the RSS of each at the start and the end, and whether any
 * process died. The data set is bounded so that a growing RSS means a leak, not more data: the
 * first `records` writes create records (over 200 subjects), every later write updates one of
 * them (its expected version tracked here), and each search is scoped to one subject.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startStack, type Stack } from '@gm/distributed';
import { issueToken, type HttpTarget } from './administration.ts';
import { writeBody } from './http-probe.ts';
import { progress } from './stats.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '20' },
    concurrency: { type: 'string', default: '8' },
    'search-every': { type: 'string', default: '10' },
    records: { type: 'string', default: '20000' },
    runtime: { type: 'string', default: 'embedded' },
  },
});
const minutes = Number(values.minutes);
const concurrency = Number(values.concurrency);
const searchEvery = Number(values['search-every']);
const recordCount = Number(values.records);
if (!(minutes > 0) || ![concurrency, searchEvery, recordCount].every((n) => Number.isInteger(n) && n >= 1)) {
  throw new Error('--minutes must be > 0; --concurrency, --search-every and --records positive integers');
}
if (values.runtime !== 'embedded' && values.runtime !== 'distributed') throw new Error('--runtime is embedded or distributed');

/**
 * Every write leaves an idempotency slot in write-admission's memory for the window (24 h by
 * default: a slot per write for a day, by design). A 1 min window keeps that bounded too, so
 * the RSS shows leaks rather than the window filling up.
 */
const BOUNDED_ENV = { MEMORY_IDEMPOTENCY_WINDOW: '1m' };

/** Resident set size of a process in MB, from /proc (Linux). */
function rssMb(pid: number): number | undefined {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'));
    return line === undefined ? undefined : Number(line.replace(/\D+/g, '')) / 1024;
  } catch {
    return undefined;
  }
}

interface Target extends HttpTarget {
  /** Process name → pid, for RSS. */
  pids(): Map<string, number>;
  /** Processes that exited during the run, with their code or signal. */
  deaths: string[];
  stop(): Promise<void>;
}

async function startEmbeddedProcess(dataDir: string): Promise<Target> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'apps/embedded/src/main.ts'], {
    cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'warn', MEMORY_RATE_LIMIT_PER_MINUTE: '1000000', ...BOUNDED_ENV },
  });
  const deaths: string[] = [];
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match?.[1]) resolve(match[1]);
    });
    child.on('exit', (code, signal) => {
      deaths.push(`embedded exited (${signal ?? code}): ${stderr.split('\n').slice(-5).join(' | ')}`);
      reject(new Error(`the runtime exited before it listened: ${stderr}`));
    });
  });
  const issuerCredential = readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim();
  return {
    url, issuerCredential, deaths,
    pids: () => new Map(child.pid === undefined || child.exitCode !== null ? [] : [['embedded', child.pid]]),
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.removeAllListeners('exit');
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function startDistributed(dataDir: string): Promise<Target> {
  const deaths: string[] = [];
  const stack: Stack = await startStack({
    dataDir, port: 0, namespace: `soak-${process.pid}`,
    onLine: (service, line) => {
      if (/exited|fatal/i.test(line)) deaths.push(`[${service}] ${line}`);
    },
    env: { MEMORY_RATE_LIMIT_PER_MINUTE: '1000000', ...BOUNDED_ENV },
  });
  return {
    url: stack.url, issuerCredential: readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim(), deaths,
    pids: () => {
      const out = new Map<string, number>();
      for (const [name, children] of stack.children) children.forEach((c, i) => c.pid !== undefined && c.exitCode === null && out.set(children.length > 1 ? `${name}#${i}` : name, c.pid));
      return out;
    },
    stop: () => stack.stop(),
  };
}

const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-soak-'));
const target = values.runtime === 'embedded' ? await startEmbeddedProcess(dataDir) : await startDistributed(dataDir);
const rssAtStart = new Map([...target.pids()].map(([name, pid]) => [name, rssMb(pid)]));
progress(`soak: ${values.runtime}, ${concurrency} writers, a search every ${searchEvery} writes, ${recordCount} records, ${minutes} min; RSS at start ${fmtRss(rssAtStart)}`);
// Capabilities live at most 15 minutes: a fresh one every 10, as an agent would refresh it.
let token = await issueToken(target, 'soak-tenant');
// The refresh in flight: awaited before the runtime stops (one due at the very end used to be
// cut off by the stop and counted as an error of the runtime).
let refreshing: Promise<void> = Promise.resolve();
const refresher = setInterval(() => {
  refreshing = issueToken(target, 'soak-tenant').then(
    (t) => void (token = t),
    (err: unknown) => void fail(`capability refresh failed: ${err instanceof Error ? err.message : String(err)}`),
  );
}, 10 * 60_000);

let writes = 0;
let searches = 0;
const errors = new Map<string, number>();
const fail = (what: string) => errors.set(what, (errors.get(what) ?? 0) + 1);
const deadline = performance.now() + minutes * 60_000;
/** Current version per record id; each lane writes only its own ids, so writes never conflict. */
const versions = new Map<string, number>();
const post = (route: string, body: unknown) =>
  fetch(`${target.url}${route}`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function writer(lane: number): Promise<void> {
  for (let n = 0; performance.now() < deadline; n += 1) {
    const slot = (lane + n * concurrency) % recordCount;
    const id = `soak-${slot}`;
    const subjectId = `subj-${slot % 200}`;
    const expectedVersion = versions.get(id) ?? 0;
    try {
      const res = await post('/v1/memories', {
        ...writeBody(`soak note ${slot} version ${expectedVersion + 1} about harbor invoices and renewal ${slot % 97}`, subjectId, id), expectedVersion,
      });
      const body = (await res.json()) as { version?: number };
      if (res.status === 201 && typeof body.version === 'number') {
        writes += 1;
        versions.set(id, body.version);
      } else fail(`write ${res.status}`);
      if (n % searchEvery === 0) {
        const s = await post('/v1/search', { query: `harbor renewal ${slot % 97}`, subjectId, limit: 10 });
        await s.arrayBuffer();
        if (s.status === 200) searches += 1;
        else fail(`search ${s.status}`);
      }
    } catch (err) {
      fail(`request failed: ${err instanceof Error ? err.message : String(err)}`);
      if (target.deaths.length > 0) return;
    }
  }
}

function fmtRss(rss: Map<string, number | undefined>): string {
  return [...rss].map(([name, mb]) => `${name} ${mb === undefined ? '?' : mb.toFixed(0)} MB`).join(', ');
}

const started = performance.now();
let lastWrites = 0;
let lastSearches = 0;
const ticker = setInterval(() => {
  const minute = Math.round((performance.now() - started) / 60_000);
  const rss = new Map([...target.pids()].map(([name, pid]) => [name, rssMb(pid)]));
  progress(
    `soak minute ${minute}: ${((writes - lastWrites) / 60).toFixed(1)} writes/s, ${((searches - lastSearches) / 60).toFixed(1)} searches/s, ` +
      `${[...errors.values()].reduce((a, b) => a + b, 0)} errors so far; RSS ${fmtRss(rss)}`,
  );
  lastWrites = writes;
  lastSearches = searches;
}, 60_000);
await Promise.all(Array.from({ length: concurrency }, (_, lane) => writer(lane)));
clearInterval(ticker);
clearInterval(refresher);
await refreshing;
const wallS = (performance.now() - started) / 1000;
const rssAtEnd = new Map([...target.pids()].map(([name, pid]) => [name, rssMb(pid)]));
await target.stop();
rmSync(dataDir, { recursive: true, force: true });

process.stdout.write(
  [
    `soak ${values.runtime} — node ${process.version}, ${os.cpus().length} cpus — ${(wallS / 60).toFixed(1)} min, ${concurrency} writers, ${recordCount} records`,
    `  writes admitted   ${writes} (${(writes / wallS).toFixed(1)}/s)`,
    `  searches answered ${searches} (${(searches / wallS).toFixed(1)}/s)`,
    `  errors            ${errors.size === 0 ? 'none' : [...errors].map(([what, n]) => `${what} ×${n}`).join('; ')}`,
    `  processes died    ${target.deaths.length === 0 ? 'none' : target.deaths.join('; ')}`,
    `  RSS at start      ${fmtRss(rssAtStart)}`,
    `  RSS at end        ${fmtRss(rssAtEnd)}`,
    '',
  ].join('\n'),
);
if (target.deaths.length > 0 || errors.size > 0) process.exitCode = 1;
