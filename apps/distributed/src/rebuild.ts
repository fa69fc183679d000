/**
 * `pnpm rebuild:distributed [--json]`: rebuilds the distributed runtime's projections (Redis,
 * Elasticsearch) from memory.events and policy.changes with the services stopped, and compares
 * digests; then writes back the deletion jobs and receipts the job store lacks, folded from the
 * log (docs/reliability.md, "Rebuilding from the log"). Reads the services' environment.
 *
 * Exit codes: 0 the digests match, or the stores that differ held nothing before (restored);
 * 1 a store that held projections now digests differently (named); 2 configuration, or
 * services still running.
 */
import { parseEnvOrExit } from '@gm/adapters';
import { isCryptoError } from '@gm/crypto';
import type { Digests, RebuildReport } from '@gm/embedded';
import { RebuildEnv, ServicesRunningError, rebuildFromLog, type DistributedRebuildReport } from './rebuild-from-log.ts';

const STORES: ReadonlyArray<keyof Digests> = ['projection', 'index', 'summaries'];

/** The stores whose digest changed although they held projections before: what the operator must look into. */
export const differingStores = (report: RebuildReport): Array<keyof Digests> =>
  STORES.filter((store) => report.before[store] !== report.after[store] && !report.wereEmpty[store]);

function describe(report: DistributedRebuildReport, ms: number): string {
  const differing = differingStores(report);
  const restored = STORES.filter((store) => report.wereEmpty[store]);
  const lines = [
    `events folded:     ${report.events} (+ ${report.policyChanges} policy changes) in ${ms} ms`,
    ...STORES.map((store) => `${`${store}:`.padEnd(19)}${report.wereEmpty[store] ? 'empty' : report.before[store]} -> ${report.after[store]}`),
  ];
  if (restored.length > 0) lines.push(`restored:          ${restored.join(', ')} held nothing before the rebuild (lost, or never written); rebuilt from the log`);
  const jobs = report.deletionJobs;
  lines.push(`deletion jobs:     ${jobs.jobs} in the log; ${jobs.restored} written back (${jobs.open} open, resumed by the orchestrator), ${jobs.receipts} receipts written back, ${jobs.receiptsAsked} asked for again`);
  if (differing.length > 0) lines.push(`DIFFERENT:         ${differing.join(', ')} did not match the fold of the log; the rebuilt state is now in place`);
  else if (report.identical) lines.push('identical:         the projections were the fold of the log');
  return lines.join('\n');
}

const json = process.argv.includes('--json');
const unknown = process.argv.slice(2).filter((arg) => arg !== '--json' && arg !== '--check');
if (unknown.length > 0) {
  process.stderr.write(`rebuild: unknown argument ${unknown.join(' ')} (usage: pnpm rebuild:distributed [--check] [--json])\n`);
  process.exit(2);
}
const env = parseEnvOrExit(RebuildEnv, process.env, 'rebuild');
const started = performance.now();
process.stderr.write(`rebuilding the projections of namespace "${env.MEMORY_NAMESPACE}" from the log ...\n`);
try {
  const report = await rebuildFromLog(env, (events) => process.stderr.write(`  ${events} events folded\n`));
  const ms = Math.round(performance.now() - started);
  process.stdout.write(json ? `${JSON.stringify({ ...report, differing: differingStores(report), durationMs: ms })}\n` : `${describe(report, ms)}\n`);
  process.exit(differingStores(report).length > 0 ? 1 : 0);
} catch (err) {
  if (err instanceof ServicesRunningError) {
    process.stderr.write(`rebuild: refusing to run: ${err.message}\n`);
    process.exit(2);
  }
  if (isCryptoError(err, 'MASTER_KEY_CONFIG') || isCryptoError(err, 'MASTER_KEY_MISMATCH')) {
    process.stderr.write(`rebuild: master key problem (${err.reason}): ${err.message}\n`);
    process.exit(2);
  }
  throw err;
}
