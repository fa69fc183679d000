/**
 * The failure matrix of docs/reliability.md, from a run's results: per scenario what was lost,
 * duplicated or read without a right, what the API answered, and how long the deployment took
 * to write again and to catch up.
 */
import { violations } from './invariants.ts';
import type { ScenarioResult } from './scenario.ts';

const seconds = (ms: number | null): string => (ms === null ? '—' : `${(ms / 1000).toFixed(1)} s`);

/** Targets of the matrix a scenario missed (empty when it met them all). */
export function targetsMissed(r: ScenarioResult): string[] {
  const missed: string[] = [];
  const { firstWriteMs, lagBackMs } = r.targets;
  if (firstWriteMs !== undefined && (r.firstWriteAfterFaultMs === null || r.firstWriteAfterFaultMs > firstWriteMs)) {
    missed.push(`first write after the fault ${seconds(r.firstWriteAfterFaultMs)}, target ≤ ${seconds(firstWriteMs)}`);
  }
  if (lagBackMs !== undefined && (r.lagBackMs === null || r.lagBackMs > lagBackMs)) {
    // The bottleneck, named: the groups still most behind at the last sample (or at the peak).
    const atEnd = Object.keys(r.lag.byGroupAtEnd).length > 0;
    const behind = Object.entries(atEnd ? r.lag.byGroupAtEnd : r.lag.byGroupAtPeak).slice(0, 3);
    const named = behind.length === 0 ? '' : ` (most behind ${atEnd ? 'at the end' : 'at the peak'}: ${behind.map(([g, lag]) => `${g} ${lag}`).join(', ')})`;
    missed.push(`lag back to its level before the fault ${seconds(r.lagBackMs)}, target ≤ ${seconds(lagBackMs)}${named}`);
  }
  return missed;
}

export function renderMatrix(results: readonly ScenarioResult[]): string {
  const header = [
    'scenario', 'acknowledged (http / async / ingest)', 'lost', 'duplicated', 'unauthorized reads', '5xx ≠ 503', 'jobs verified / failed (receipts)',
    'first write after fault', 'lag back', 'writes/s before / during / after', 'verdict',
  ];
  const rows = results.map((r) => {
    const i = r.invariants;
    const broken = violations(i);
    const missed = targetsMissed(r);
    const receiptsOk = i.receipts.missing + i.receipts.duplicated + i.receipts.invalid === 0;
    return [
      `${r.scenario}: ${r.fault}`,
      `${i.acknowledged.http} / ${i.acknowledged.async} / ${i.acknowledged.ingest}`,
      String(i.lost), String(i.duplicated), String(i.unauthorizedReads), String(i.serverErrors),
      `${i.jobs.verified} / ${i.jobs.failed} (${receiptsOk ? 'one each' : JSON.stringify(i.receipts)})`,
      seconds(r.firstWriteAfterFaultMs), seconds(r.lagBackMs),
      `${r.writesPerSecond.before.toFixed(1)} / ${r.writesPerSecond.during.toFixed(1)} / ${r.writesPerSecond.after.toFixed(1)}`,
      `${broken.length === 0 ? 'holds' : broken.join('; ')}${missed.length > 0 ? `; target missed: ${missed.join('; ')}` : ''}`,
    ];
  });
  return [header, header.map(() => '---'), ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}
