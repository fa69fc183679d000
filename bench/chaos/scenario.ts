/**
 * One scenario of the fault suite: the load runs, a baseline is taken, the fault is injected and
 * held, then undone; the load runs on, stops, the deployment settles, and the invariants are
 * judged. Measured: time to the first successful write started after the fault, time until the
 * consumer lag is back to its level before the fault, and acknowledged writes/s before, during
 * and after.
 */
import { progress } from '../stats.ts';
import { ChaosHttp } from './http.ts';
import { judge, type InvariantReport, type Judged } from './invariants.ts';
import { sumOf, type LagProbe } from './lag.ts';
import { emptyLedger, type AcknowledgedWrite, type Answer } from './ledger.ts';
import { startLoad, type LoadShape, type LoadTarget } from './load.ts';
import { chaosRights } from './rights.ts';

export interface Fault {
  /** What was done, for the report (e.g. "kill -9 of kafka-2, leader of 14 partitions"). */
  detail: string;
  /** Undoes the fault and resolves once the engines are healthy again. */
  undo(): Promise<void>;
  /** The fault wipes the state store: what only it held (jobs, async outcomes) is judged as lost by design. */
  wipesState?: boolean;
}

export interface Scenario {
  name: string;
  /** Injects the fault; resolves once it is in place. */
  inject(): Promise<Fault>;
  /** How long the fault is held before it is undone. */
  holdMs: number;
  /** What the matrix promises (docs/reliability.md): writes back, and lag back, within these ms of the fault. */
  targets: { firstWriteMs?: number; lagBackMs?: number };
}

export interface Phases {
  baselineMs: number;
  afterMs: number;
  settleMs: number;
}

export interface ScenarioResult {
  scenario: string;
  fault: string;
  targets: Scenario['targets'];
  /** ms from the fault to the first acknowledged write that started after it. */
  firstWriteAfterFaultMs: number | null;
  /** ms from the fault until the summed consumer lag was back at its level before the fault. */
  lagBackMs: number | null;
  writesPerSecond: { before: number; during: number; after: number };
  /** The summed lag; per group at its peak and at the last sample (groups behind only): which one a missed target waits on. */
  lag: { beforeMax: number; peak: number; byGroupAtPeak: Record<string, number>; byGroupAtEnd: Record<string, number> };
  /** What clients saw, per route and phase: answers by status, and the latency of the successes. */
  answers: Array<{ route: string; phase: 'before' | 'during' | 'after'; statuses: Record<string, number>; p50Ms: number; maxMs: number }>;
  invariants: InvariantReport;
}

export interface ScenarioDeps {
  target: LoadTarget;
  shape: LoadShape;
  phases: Phases;
  lag: LagProbe;
  stores: Pick<Judged, 'bus' | 'state' | 'index'>;
  run: string;
}

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface LagSample {
  at: number;
  /** Summed; NaN when the probe failed (a broker down). */
  lag: number;
  byGroup: Record<string, number>;
}

/** Samples the lag every second until `until` says stop; `onSample` sees each. */
async function sampleLag(probe: LagProbe, clock: () => number, until: () => boolean, onSample: (sample: LagSample) => void): Promise<void> {
  while (!until()) {
    const started = clock();
    const byGroup = await probe.byGroup().catch(() => undefined);
    onSample({ at: started, lag: byGroup === undefined ? Number.NaN : sumOf(byGroup), byGroup: byGroup ?? {} });
    await pause(Math.max(0, 1_000 - (clock() - started)));
  }
}

/** The groups with a lag, most behind first. */
const behind = (byGroup: Record<string, number>): Record<string, number> =>
  Object.fromEntries(Object.entries(byGroup).filter(([, lag]) => lag > 0).sort((a, b) => b[1] - a[1]));

const rate = (writes: readonly AcknowledgedWrite[], from: number, to: number): number =>
  to > from ? (writes.filter((w) => w.at >= from && w.at < to).length * 1000) / (to - from) : 0;

export async function runScenario(deps: ScenarioDeps, scenario: Scenario): Promise<ScenarioResult> {
  const zero = performance.now();
  const epochAtZero = Date.now();
  const clock = () => performance.now() - zero;
  const ledger = emptyLedger();
  const tenant = `chaos-${deps.run}-${scenario.name}`;
  const rights = await chaosRights({ url: deps.target.url, issuerCredential: deps.target.issuerCredential }, tenant);
  const load = startLoad(deps.target, rights, ledger, deps.shape, `${deps.run}-${scenario.name}`, clock);
  const samples: LagSample[] = [];
  let sampling = true;
  const sampler = sampleLag(deps.lag, clock, () => !sampling, (sample) => samples.push(sample));
  let faultAt = 0;
  let recoveredAt = 0;
  let stoppedAt = 0;
  let fault: Fault | undefined;
  let detail = scenario.name;
  let wipesState = false;
  let completed = false;
  try {
    progress(`${scenario.name}: load running, ${deps.phases.baselineMs / 1000} s of baseline`);
    await pause(deps.phases.baselineMs);
    faultAt = clock();
    fault = await scenario.inject();
    detail = fault.detail;
    wipesState = fault.wipesState === true;
    progress(`${scenario.name}: fault injected (${fault.detail}); held ${scenario.holdMs / 1000} s`);
    await pause(scenario.holdMs);
    await fault.undo();
    fault = undefined;
    recoveredAt = clock();
    progress(`${scenario.name}: fault undone after ${((recoveredAt - faultAt) / 1000).toFixed(1)} s; ${deps.phases.afterMs / 1000} s more load`);
    await pause(deps.phases.afterMs);
    completed = true;
  } finally {
    // A failed injection or undo still stops the load and the sampler before the error surfaces.
    await fault?.undo().catch(() => undefined);
    stoppedAt = clock();
    progress(`${scenario.name}: stopping the load (its retries run on for up to 2 min)`);
    try {
      await load.stop();
    } finally {
      // A scenario that failed part-way is not judged: its error surfaces once the sampler has stopped.
      if (!completed) {
        sampling = false;
        await sampler;
      }
    }
  }
  progress(`${scenario.name}: load stopped; waiting for the deployment to settle, then judging the invariants`);
  // The lag is sampled on while the deployment settles: it may get back after the load stopped.
  await settle(deps.lag, deps.phases.settleMs);
  sampling = false;
  await sampler;
  const beforeMax = samples.filter((s) => s.at < faultAt).reduce((m, s) => Math.max(m, Number.isNaN(s.lag) ? 0 : s.lag), 0);
  const back = samples.find((s) => s.at > faultAt && s.at >= recoveredAt && s.lag <= beforeMax);
  const measured = samples.filter((s) => !Number.isNaN(s.lag));
  const peak = measured.reduce<LagSample | undefined>((m, s) => (m === undefined || s.lag > m.lag ? s : m), undefined);
  const firstAfter = ledger.writes.filter((w) => w.startedAt >= faultAt).reduce((m, w) => Math.min(m, w.at), Number.POSITIVE_INFINITY);

  const invariants = await judge({
    http: new ChaosHttp(deps.target.url, ledger.answers, clock), ledger, rights, ...deps.stores, epochAtZero, settleMs: deps.phases.settleMs,
    ...(wipesState ? { stateLostAt: faultAt } : {}),
  });
  return {
    scenario: scenario.name,
    fault: detail,
    targets: scenario.targets,
    firstWriteAfterFaultMs: Number.isFinite(firstAfter) ? Math.round(firstAfter - faultAt) : null,
    lagBackMs: back === undefined ? null : Math.round(back.at - faultAt),
    writesPerSecond: { before: rate(ledger.writes, 0, faultAt), during: rate(ledger.writes, faultAt, recoveredAt), after: rate(ledger.writes, recoveredAt, stoppedAt) },
    lag: {
      beforeMax,
      peak: peak?.lag ?? 0,
      byGroupAtPeak: behind(peak?.byGroup ?? {}),
      byGroupAtEnd: behind(measured.at(-1)?.byGroup ?? {}),
    },
    answers: answersByPhase(ledger.answers, faultAt, recoveredAt),
    invariants,
  };
}

function answersByPhase(answers: readonly Answer[], faultAt: number, recoveredAt: number): ScenarioResult['answers'] {
  const groups = new Map<string, Answer[]>();
  for (const a of answers) {
    const phase = a.at < faultAt ? 'before' : a.at < recoveredAt ? 'during' : 'after';
    const key = `${a.route}\u0000${phase}`;
    groups.set(key, [...(groups.get(key) ?? []), a]);
  }
  return [...groups].map(([key, group]) => {
    const [route = '', phase] = key.split('\u0000');
    const statuses: Record<string, number> = {};
    for (const a of group) statuses[a.networkError ? 'no answer' : String(a.status)] = (statuses[a.networkError ? 'no answer' : String(a.status)] ?? 0) + 1;
    const ok = group.filter((a) => a.status >= 200 && a.status < 300).map((a) => a.ms).sort((x, y) => x - y);
    return { route, phase: phase as 'before' | 'during' | 'after', statuses, p50Ms: Math.round(ok[Math.floor(ok.length / 2)] ?? 0), maxMs: Math.round(ok.at(-1) ?? 0) };
  });
}

/** Until the summed lag has stopped changing for three seconds (the pipeline is idle), bounded. */
async function settle(probe: LagProbe, boundMs: number): Promise<void> {
  const deadline = performance.now() + boundMs;
  let last = Number.NaN;
  let still = 0;
  while (still < 3 && performance.now() < deadline) {
    const lag = await probe.total().catch(() => Number.NaN);
    still = lag === last ? still + 1 : 0;
    last = lag;
    await pause(1_000);
  }
}
