/**
 * `pnpm chaos`: the fault suite on the local cluster (docs/reliability.md "The fault suite").
 * Starts the cluster engines (three Kafka brokers at replication 3 / min ISR 2, two
 * Elasticsearch nodes, Redis with a replica and Sentinels), the distributed runtime on them in
 * production mode, then runs each scenario under a sustained mixed load and judges the
 * invariants. Writes bench-results/chaos-<time>.json and prints the failure matrix.
 *
 *   pnpm chaos                       every scenario
 *   pnpm chaos --reduced             CI's run: one broker kill -9 under load, shorter phases
 *   pnpm chaos --scenarios a,b       these scenarios (names in the table)
 *   pnpm chaos --keep                leave the cluster running afterwards (the next run resets it)
 *   pnpm chaos --engines local       the control scenario (no fault) on the engines the env names
 *   pnpm chaos --semantic            with semantic retrieval (the vector-indexer) on
 *
 * Exit code 1 when any invariant is violated or a scenario cannot run to its end; a missed
 * target of the matrix (seconds to the first write, to the lag back) is reported, not failed on.
 */
import { randomBytes } from 'node:crypto';
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openIndex, openState } from '@gm/adapters';
import { createKafkaBus } from '@gm/bus';
import { DistributedEnv, WithElasticsearch, WithRedis } from '@gm/config';
import { startStack } from '@gm/distributed';
import { progress } from '../stats.ts';
import { CLUSTER_ENV, clusterControl } from './cluster.ts';
import { violations } from './invariants.ts';
import { openLagProbe } from './lag.ts';
import { renderMatrix, targetsMissed } from './report.ts';
import { runScenario, type Phases, type ScenarioResult } from './scenario.ts';
import { scenarios } from './scenarios.ts';

const args = process.argv.slice(2);
const flag = (name: string) => args.includes(name);
const value = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const reduced = flag('--reduced');
const phases: Phases = reduced ? { baselineMs: 20_000, afterMs: 20_000, settleMs: 180_000 } : { baselineMs: 30_000, afterMs: 30_000, settleMs: 300_000 };

const ROOT = path.resolve(import.meta.dirname, '../..');
const run = randomBytes(3).toString('hex');
const namespace = `chaos-${run}`;
const workDir = mkdtempSync(path.join(os.tmpdir(), 'gm-chaos-'));
const logFile = path.join(workDir, 'services.log');

// `--engines local`: the engines the env names (or the development ones), for the control scenario alone.
const onCluster = value('--engines') !== 'local';
const control = clusterControl();
if (onCluster) {
  // Every run on an empty cluster: each run's namespace leaves its topics (24 of 12 partitions
  // each) behind, and a few runs' worth of replicated partitions keep the brokers busy enough
  // to slow every scenario after (docs/reliability.md "The fault suite").
  progress('resetting the cluster engines to an empty cluster (infra/local/cluster.sh reset), then starting them');
  await control.reset();
  await control.start();
}

if (onCluster) {
  // The stack launcher reads the engines from this process's env (and starts the development
  // ones for any it does not find): the cluster's, with Sentinels in Redis's place.
  Object.assign(process.env, CLUSTER_ENV);
  delete process.env.REDIS_URL;
}
// Semantic retrieval off unless asked: on two cores the vector-indexer's embedding takes the CPU
// the rest of the pipeline needs to keep up with the load (docs/reliability.md "The fault suite").
const semantic = flag('--semantic');
const env: Record<string, string> = {
  ...(onCluster ? CLUSTER_ENV : {}),
  MEMORY_SEMANTIC: semantic ? 'on' : 'off',
  MEMORY_LOG_LEVEL: 'warn', MEMORY_RATE_LIMIT_PER_MINUTE: '1000000',
  // The suite's administrators take their first admin grants on the issuer's word, as the
  // walkthrough's do (rights.ts); production mode would otherwise take them from configuration only.
  MEMORY_ADMIN_BOOTSTRAP: 'issuer',
};
progress(`starting the distributed runtime on the cluster, namespace ${namespace} (service logs: ${logFile})`);
const stack = await startStack({
  dataDir: path.join(workDir, 'data'), port: 0, namespace, env,
  onLine: (service, line) => appendFileSync(logFile, `[${service}] ${line}\n`),
});
const engineEnv = { ...DistributedEnv.parse(stack.env), ...WithRedis.parse(stack.env), ...WithElasticsearch.parse(stack.env) };
const bus = createKafkaBus({ brokers: engineEnv.KAFKA_BROKERS, clientId: 'gm-chaos-judge', topicPrefix: `${namespace}.` });
const state = openState(engineEnv);
const index = openIndex(engineEnv);
const lag = await openLagProbe(engineEnv.KAFKA_BROKERS, namespace);
const issuerCredential = readFileSync(path.join(workDir, 'data', 'issuer-credential'), 'utf8').trim();

const chosen = value('--scenarios')?.split(',') ?? (!onCluster ? ['no-fault'] : reduced ? ['broker-kill'] : undefined);
const results: ScenarioResult[] = [];
const errors: Array<{ scenario: string; error: string }> = [];
let failed = false;
try {
  for (const scenario of scenarios({ control, stack, brokers: engineEnv.KAFKA_BROKERS, namespace }, chosen)) {
    progress(`scenario ${scenario.name}`);
    let result: ScenarioResult;
    try {
      result = await runScenario({
        target: { url: stack.url, issuerCredential, brokers: engineEnv.KAFKA_BROKERS, namespace },
        shape: { syncWriters: 2, pauseMs: 250 }, phases, lag, stores: { bus, state, index }, run,
      }, scenario);
    } catch (err) {
      // The suite itself failed (a node that would not restart, a refused setup call): reported, and the next scenario runs.
      failed = true;
      errors.push({ scenario: scenario.name, error: err instanceof Error ? err.message : String(err) });
      progress(`${scenario.name}: the scenario could not run to its end: ${err instanceof Error ? err.message : String(err)}`);
      await control.waitHealthy().catch(() => undefined);
      continue;
    }
    results.push(result);
    // Invariants decide the exit code; the timing targets are measurements, reported beside them
    // (a shared machine's seconds say little, and CI runs this).
    const broken = violations(result.invariants);
    const missed = targetsMissed(result);
    if (broken.length > 0) failed = true;
    progress(`${scenario.name}: ${broken.length === 0 ? 'every invariant holds' : broken.join('; ')}${missed.length > 0 ? `; target missed: ${missed.join('; ')}` : ''}`);
    for (const f of result.invariants.findings) progress(`  ${f}`);
  }
} finally {
  await lag.close();
  await bus.close();
  await state.kv.close();
  await index.close();
  await stack.stop();
  if (onCluster && !flag('--keep')) await control.stop();
}

mkdirSync(path.join(ROOT, 'bench-results'), { recursive: true });
const file = path.join(ROOT, 'bench-results', `chaos-${new Date().toISOString().replaceAll(':', '-')}.json`);
writeFileSync(file, `${JSON.stringify({ at: new Date().toISOString(), reduced, semantic, phases, cluster: control.describe(), results, errors }, null, 2)}\n`);
process.stdout.write(`${renderMatrix(results)}\n`);
for (const e of errors) process.stdout.write(`${e.scenario}: could not run to its end: ${e.error}\n`);
progress(`wrote ${path.relative(ROOT, file)}; service logs in ${logFile}`);
process.exit(failed ? 1 : 0);
