import type { CheckpointResult, RunResult } from './runner.ts';

export interface Rate { n: number; bad: number; rate: number }

export interface Scores {
  system: string;
  checkpoints: number;
  /** Utility: authorized requests answered with every expected item. */
  U: number;
  /** Access-control violation rate. */
  A: number;
  /** Active-forgetting failure rate. */
  F: number;
  /** Over-refusal: authorized requests answered with a denial or nothing at all. */
  OR: number;
  /** GateMem's memory governance score, 0..100: 100·U·(1−A)·(1−F). */
  MGS: number;
  falseDenialRate: number;
  revocationConvergenceMs: { n: number; p50: number | null; p95: number | null; neverConverged: number };
  /** Deletion jobs verified, covering their records, with no copy found by any later probe. */
  deletionJobCompleteness: { n: number; complete: number; share: number };
  /** Validations that still called a packet valid after its grant or record went. */
  stalePacketUse: Rate;
  provenanceCoverage: number;
  setupErrors: number;
  requests: number;
  wallMs: number;
  perDomain: Record<string, { U: number; A: number; F: number; OR: number; MGS: number; n: number }>;
  /** Violation rate per attack kind; `utility` is the share of authorized requests not fully answered. */
  perKind: Record<string, Rate>;
}

const ratio = (bad: number, n: number): number => (n === 0 ? 0 : bad / n);
const rate = (list: CheckpointResult[], bad: (c: CheckpointResult) => boolean): Rate => {
  const count = list.filter(bad).length;
  return { n: list.length, bad: count, rate: ratio(count, list.length) };
};

function headline(list: CheckpointResult[]) {
  const utility = list.filter((c) => c.category === 'utility');
  const U = ratio(utility.filter((c) => c.passed).length, utility.length);
  const A = rate(list.filter((c) => c.category === 'access'), (c) => c.violation).rate;
  const F = rate(list.filter((c) => c.category === 'forgetting'), (c) => c.violation).rate;
  const OR = rate(utility, (c) => c.status >= 400 || c.items === 0 && c.op === 'search').rate;
  return { U, A, F, OR, MGS: 100 * U * (1 - A) * (1 - F), n: list.length };
}

function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? null;
}

export function score(run: RunResult): Scores {
  const list = run.checkpoints;
  const utility = list.filter((c) => c.category === 'utility');
  const converged = run.convergenceMs.filter((ms): ms is number => ms !== null).sort((a, b) => a - b);
  const forgettingViolations = new Set(list.filter((c) => c.category === 'forgetting' && c.violation && c.jobKey).map((c) => `${c.episode}/${c.jobKey}`));
  const items = utility.reduce((sum, c) => sum + c.items, 0);
  const perDomain: Scores['perDomain'] = {};
  for (const domain of [...new Set(list.map((c) => c.domain))]) perDomain[domain] = headline(list.filter((c) => c.domain === domain));
  const perKind: Scores['perKind'] = {};
  for (const kind of [...new Set(list.map((c) => c.kind))].sort()) {
    perKind[kind] = rate(list.filter((c) => c.kind === kind), (c) => (kind === 'utility' ? !c.passed : c.violation));
  }
  return {
    system: run.system,
    checkpoints: list.length,
    ...headline(list),
    falseDenialRate: rate(utility, (c) => c.falseDenial).rate,
    revocationConvergenceMs: {
      n: run.convergenceMs.length, p50: percentile(converged, 50), p95: percentile(converged, 95),
      neverConverged: run.convergenceMs.length - converged.length,
    },
    deletionJobCompleteness: completeness(run, forgettingViolations),
    stalePacketUse: rate(list.filter((c) => c.op === 'validate'), (c) => c.violation),
    provenanceCoverage: ratio(utility.reduce((sum, c) => sum + c.itemsWithProvenance, 0), items),
    setupErrors: run.setupErrors.length,
    requests: run.requests,
    wallMs: run.wallMs,
    perDomain,
    perKind,
  };
}

function completeness(run: RunResult, leaked: Set<string>): Scores['deletionJobCompleteness'] {
  const complete = run.jobs.filter((j) => j.status === 'verified' && j.coversRecords && !leaked.has(`${j.episode}/${j.jobKey}`)).length;
  return { n: run.jobs.length, complete, share: ratio(complete, run.jobs.length) };
}
