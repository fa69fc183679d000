/**
 * What the distributed stack costs at rest: the nine services and the local engines with no
 * traffic, each process's CPU over a window, in percent of one core (docs/sizing.md, "At
 * rest"). A deployment pays this around the clock, and it is part of every write's CPU figure
 * (at 20 writes/s, 10 % of a core is 5 ms per write).
 *
 * `pnpm bench:idle [seconds=60]` runs it alone; `pnpm bench` runs it before its distributed
 * phases (idleCpu below).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { startStack, type Stack } from '@gm/distributed';
import { resolveEngines } from './engines.ts';
import { sweepNamespace } from './cleanup.ts';
import { localEngineProcesses, sampleCpu, type ProcessCpu } from './cpu.ts';
import { progress } from './stats.ts';

export interface IdleCpu {
  seconds: number;
  /** Percent of one core, every process summed. */
  totalPercent: number;
  enginesPercent: number;
  servicesPercent: number;
  processes: ProcessCpu[];
}

/** Services (by their stack name, summed over instances) and engines of a measured stack. */
export function stackProcesses(stack: Stack): Array<{ name: string; pid: number }> {
  return [
    ...[...stack.children].flatMap(([name, children]) => children.flatMap((child) => (child.pid === undefined ? [] : [{ name, pid: child.pid }]))),
    ...localEngineProcesses(),
  ];
}

const ENGINES = new Set(['kafka', 'elasticsearch', 'redis']);

/** Each process's CPU over `seconds` with nothing sent to the stack. */
export async function idleCpu(processes: ReadonlyArray<{ name: string; pid: number }>, seconds: number): Promise<IdleCpu> {
  const sample = sampleCpu(processes);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const rows = sample.stop();
  const sum = (keep: (r: ProcessCpu) => boolean): number => rows.filter(keep).reduce((s, r) => s + (r.cpuPercent || 0), 0);
  return {
    seconds,
    totalPercent: sum(() => true),
    enginesPercent: sum((r) => ENGINES.has(r.name)),
    servicesPercent: sum((r) => !ENGINES.has(r.name)),
    processes: rows,
  };
}

export function formatIdle(idle: IdleCpu): string {
  const rows = idle.processes.map((p) => `${p.name} ${p.cpuPercent.toFixed(1)} %`).join(', ');
  return `at rest over ${idle.seconds} s: ${idle.totalPercent.toFixed(1)} % of one core (engines ${idle.enginesPercent.toFixed(1)}, services ${idle.servicesPercent.toFixed(1)}): ${rows}`;
}

/** How long a started stack is left before the window: its start-up work (joins, first fetches) is not rest. */
export const IDLE_SETTLE_SECONDS = 15;

if (import.meta.url === `file://${process.argv[1]}`) {
  const seconds = Number(process.argv[2] ?? 60);
  const engines = await resolveEngines();
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-idle-'));
  const namespace = `idle-${randomBytes(4).toString('hex')}`;
  const stack = await startStack({ dataDir, port: 0, namespace });
  try {
    progress(`idle: ${stack.children.size} services started; ${IDLE_SETTLE_SECONDS} s to settle, then ${seconds} s measured`);
    await new Promise((resolve) => setTimeout(resolve, IDLE_SETTLE_SECONDS * 1000));
    console.log(formatIdle(await idleCpu(stackProcesses(stack), seconds)));
  } finally {
    await stack.stop();
    rmSync(dataDir, { recursive: true, force: true });
    // Indices left behind keep refreshing on their interval: every later run would pay for them.
    const problems = (await sweepNamespace(engines, namespace)).filter((note) => note.includes('FAILED'));
    if (problems.length > 0) console.error(`cleanup of ${namespace}: ${problems.join('; ')}`);
  }
}
