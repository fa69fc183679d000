/**
 * The scenarios of the fault suite (docs/reliability.md "The fault suite"), one fault each, in
 * the order of the matrix. Engines are failed through the cluster launcher; services through the
 * stack, which runs two instances of the one being failed.
 */
import type { Stack, ServiceName } from '@gm/distributed';
import { progress } from '../stats.ts';
import type { ClusterControl } from './cluster.ts';
import { runChild } from './child.ts';
import { writePathRoles } from './placement.ts';
import type { Fault, Scenario } from './scenario.ts';

export interface ScenarioContext {
  control: ClusterControl;
  stack: Stack;
  brokers: string[];
  namespace: string;
}

/** Kafka fences a broker that stops heartbeating after broker.session.timeout.ms (9 s, the default the cluster keeps). */
const BROKER_SESSION_TIMEOUT_MS = 9_000;

/** The consumer-group services a kill -9 is tried on (the HTTP edge has one address: it is restarted in the rolling scenario). */
const KILLED_SERVICES: ServiceName[] = ['write-admission', 'projector', 'index-builder', 'deletion-orchestrator', 'receipt-verifier', 'ingest-gateway'];

const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The services whose consumer groups write what the rebuild writes (projections, deletion jobs, receipts): stopped while it runs (it refuses otherwise). */
const REBUILT_STATE_WRITERS: ServiceName[] = ['projector', 'index-builder', 'vector-indexer', 'expiry-scheduler', 'deletion-orchestrator', 'receipt-verifier'];

/** `pnpm rebuild:distributed --json` with the stack's env, as an operator runs it: its report, or why it failed. Asynchronously, for the load's sake (`runChild`). */
async function rebuildFromLog(env: Record<string, string>): Promise<{ events: number; durationMs: number; differing: string[]; jobsRestored: number; jobsOpen: number }> {
  const { code, stdout } = await runChild(process.execPath, ['--import', 'tsx', 'apps/distributed/src/rebuild.ts', '--json'], { capture: true, env });
  // 1: a store that held data digests differently afterwards — here the index, which the stopped
  // index-builder had left behind the log. The rebuilt state is in place either way.
  if (code !== 0 && code !== 1) throw new Error(`rebuild:distributed exited with ${code}: ${stdout}`);
  const report = JSON.parse(stdout) as {
    events: number; durationMs: number; wereEmpty: Record<string, boolean>; differing: string[]; deletionJobs: { restored: number; open: number };
  };
  return { events: report.events, durationMs: report.durationMs, differing: report.differing, jobsRestored: report.deletionJobs.restored, jobsOpen: report.deletionJobs.open };
}

async function writePathBroker(c: ScenarioContext): Promise<{ nodeId: number; detail: string }> {
  const [top] = await writePathRoles(c.brokers, c.namespace);
  if (top === undefined) throw new Error('the cluster has no brokers');
  return { nodeId: top.nodeId, detail: `kafka-${top.nodeId}, leader of ${top.leads} memory.commands/memory.events partitions and coordinator of ${top.coordinates} write-admission transactions` };
}

/**
 * A fault that is a sequence of steps rather than a state held (rolling restarts, kills in turn):
 * nothing is injected up front, the steps run as the "undo", and the lag must be back in 2 min.
 */
const stepwise = (name: string, detail: string, steps: () => Promise<void>): Scenario => ({
  name, holdMs: 0, targets: { lagBackMs: 120_000 }, inject: async () => ({ detail, undo: steps }),
});

export function scenarios(c: ScenarioContext, chosen?: readonly string[]): Scenario[] {
  const all: Scenario[] = [
    {
      // The control: the same load and invariants with nothing failed.
      name: 'no-fault',
      holdMs: 10_000,
      targets: { firstWriteMs: 30_000, lagBackMs: 120_000 },
      inject: async () => ({ detail: 'none (the control)', undo: async () => undefined }),
    },
    {
      name: 'broker-kill',
      holdMs: 30_000,
      targets: { firstWriteMs: 30_000, lagBackMs: 120_000 },
      async inject(): Promise<Fault> {
        const victim = await writePathBroker(c);
        await c.control.signal(`kafka-${victim.nodeId}`, 'KILL');
        return { detail: `kill -9 of ${victim.detail}; restarted after 30 s`, undo: () => c.control.restart(`kafka-${victim.nodeId}`) };
      },
    },
    stepwise('broker-rolling-restart', 'each broker in turn stopped (controlled shutdown) and restarted, waiting for the replicas to catch up', async () => {
      for (const node of ['kafka-1', 'kafka-2', 'kafka-3']) {
        progress(`broker-rolling-restart: ${node}`);
        await c.control.stopNode(node);
        await c.control.restart(node);
      }
    }),
    {
      name: 'broker-freeze',
      holdMs: 60_000,
      targets: { firstWriteMs: BROKER_SESSION_TIMEOUT_MS + 10_000, lagBackMs: 120_000 },
      async inject(): Promise<Fault> {
        const victim = await writePathBroker(c);
        await c.control.signal(`kafka-${victim.nodeId}`, 'STOP');
        return {
          detail: `SIGSTOP of ${victim.detail} for 60 s, then SIGCONT`,
          undo: async () => {
            await c.control.signal(`kafka-${victim.nodeId}`, 'CONT');
            await c.control.waitHealthy();
          },
        };
      },
    },
    {
      name: 'elasticsearch-kill',
      holdMs: 30_000,
      targets: { firstWriteMs: 30_000, lagBackMs: 120_000 },
      async inject(): Promise<Fault> {
        const node = await c.control.elasticsearchNodeWithMostPrimaries();
        await c.control.signal(node, 'KILL');
        return { detail: `kill -9 of ${node}, which held the most primary shards; restarted after 30 s`, undo: () => c.control.restart(node) };
      },
    },
    {
      name: 'redis-primary-kill',
      holdMs: 30_000,
      targets: { firstWriteMs: 30_000, lagBackMs: 120_000 },
      async inject(): Promise<Fault> {
        const node = await c.control.redisPrimary();
        await c.control.signal(node, 'KILL');
        return { detail: `kill -9 of the Redis primary (${node}); Sentinel promotes the replica; the old primary rejoins as a replica after 30 s`, undo: () => c.control.restart(node) };
      },
    },
    {
      name: 'redis-emptied',
      holdMs: 0,
      targets: { firstWriteMs: 30_000, lagBackMs: 120_000 },
      async inject(): Promise<Fault> {
        const stopped = REBUILT_STATE_WRITERS.filter((s) => (c.stack.children.get(s) ?? []).some((child) => child.exitCode === null));
        for (const service of stopped) await c.stack.kill(service, 'SIGTERM');
        let rebuilt: Awaited<ReturnType<typeof rebuildFromLog>>;
        try {
          await c.control.flushRedis();
          progress('redis-emptied: Redis flushed; rebuilding the projections from the log');
          rebuilt = await rebuildFromLog(c.stack.env);
        } finally {
          // Whatever the rebuild did, the deployment gets its services back.
          for (const service of stopped) await c.stack.start(service);
        }
        const differing = rebuilt.differing.length > 0 ? ` (${rebuilt.differing.join(', ')} rebuilt past what the stopped services had folded)` : '';
        return {
          detail: `Redis emptied (FLUSHALL on the primary) with ${stopped.join(', ')} stopped; \`pnpm rebuild:distributed\` folded ${rebuilt.events} events in ${(rebuilt.durationMs / 1000).toFixed(1)} s${differing} and restored ${rebuilt.jobsRestored} deletion jobs (${rebuilt.jobsOpen} open), then they were started again`,
          undo: async () => undefined,
          wipesState: true,
        };
      },
    },
    stepwise('service-kill', `kill -9 of one of two instances of each of ${KILLED_SERVICES.join(', ')} in turn`, async () => {
      for (const service of KILLED_SERVICES) {
        await c.stack.start(service);
        await pause(5_000);
        progress(`service-kill: kill -9 of one ${service} of two`);
        await c.stack.killOne(service, 'SIGKILL');
        await pause(10_000);
      }
    }),
    stepwise('service-rolling-restart', 'every service replaced in turn: a new instance started, then the old one stopped (SIGTERM)', async () => {
      for (const [service, running] of c.stack.children) {
        if (running.length === 0 || service === 'retrieval-broker') continue;
        await c.stack.start(service);
        await c.stack.killOne(service, 'SIGTERM');
      }
    }),
  ];
  if (chosen === undefined) return all;
  const unknown = chosen.filter((name) => !all.some((s) => s.name === name));
  if (unknown.length > 0) throw new Error(`unknown scenario(s) ${unknown.join(', ')}: ${all.map((s) => s.name).join(', ')}`);
  return all.filter((s) => chosen.includes(s.name));
}
