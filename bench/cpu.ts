/**
 * CPU per process over a load, from /proc/<pid>/stat (user + system ticks): which process is
 * CPU-bound. 100 % is one core; the machine has os.cpus().length of them. Linux only; elsewhere
 * every figure is NaN and the report says so.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';

/** Clock ticks per second of /proc (USER_HZ; 100 on every Linux this runs on). */
const TICKS = 100;

function ticksOf(pid: number): number {
  try {
    // Fields after the parenthesised command name: state is field 3, utime 14 and stime 15.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return Number.NaN;
  }
}

export interface ProcessCpu {
  name: string;
  pid: number;
  /** Percent of one core over the sampled interval. */
  cpuPercent: number;
}

/** Starts counting now; `stop()` answers each process's CPU since, busiest first. */
export function sampleCpu(processes: ReadonlyArray<{ name: string; pid: number }>): { stop(): ProcessCpu[] } {
  const started = performance.now();
  const before = new Map(processes.map((p) => [p.pid, ticksOf(p.pid)]));
  return {
    stop: () => {
      const seconds = (performance.now() - started) / 1000;
      return processes
        .map((p) => ({ ...p, cpuPercent: ((ticksOf(p.pid) - (before.get(p.pid) ?? Number.NaN)) / TICKS / seconds) * 100 }))
        .sort((a, b) => (b.cpuPercent || 0) - (a.cpuPercent || 0));
    },
  };
}

/** The checkout whose infra/local runs the engines. */
const CHECKOUT = path.resolve(import.meta.dirname, '..');

/** The local engines' processes (infra/local/.run/<engine>/<engine>.pid), when this checkout runs them. */
export function localEngineProcesses(root: string = CHECKOUT): Array<{ name: string; pid: number }> {
  const run = path.join(root, 'infra/local/.run');
  if (!existsSync(run)) return [];
  return readdirSync(run).flatMap((engine) => {
    const file = path.join(run, engine, `${engine}.pid`);
    if (!existsSync(file)) return [];
    const pid = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && existsSync(`/proc/${pid}`) ? [{ name: engine, pid }] : [];
  });
}

/** CPU a process spent per unit of work (an admitted write), in ms of one core. */
export interface CpuCost {
  name: string;
  /** Percent of one core over the measured load. */
  cpuPercent: number;
  msPerWrite: number;
}

/** Each process's CPU ms per admitted write over a load of `wallMs` that admitted `writes`, busiest first. */
export function costPerWrite(rows: readonly ProcessCpu[], wallMs: number, writes: number): CpuCost[] {
  return rows.map((r) => ({ name: r.name, cpuPercent: r.cpuPercent, msPerWrite: writes > 0 ? ((r.cpuPercent / 100) * wallMs) / writes : Number.NaN }));
}

/** The engines of a deployment, as named by localEngineProcesses. */
const ENGINE_NAMES: ReadonlySet<string> = new Set(['kafka', 'elasticsearch', 'redis']);

/**
 * What the engines alone allow on this machine: its cores ÷ the engines' CPU ms per admitted
 * write. The pipeline's services would need cores of their own beside them; this is the
 * ceiling a load bound by the engines meets (docs/sizing.md).
 */
export function engineBoundCeiling(costs: readonly CpuCost[], cores: number): { enginesMsPerWrite: number; writesPerSecond: number } {
  const enginesMsPerWrite = costs.filter((c) => ENGINE_NAMES.has(c.name)).reduce((sum, c) => sum + (c.msPerWrite || 0), 0);
  return { enginesMsPerWrite, writesPerSecond: enginesMsPerWrite > 0 ? (cores * 1000) / enginesMsPerWrite : Number.NaN };
}

/** The CPU ms one local engine spends on `work`, per unit of it (NaN when the engine is not a local process). */
export async function engineCpuPer<T>(engine: string, units: number, work: () => Promise<T>): Promise<{ result: T; cpuMsPerUnit: number }> {
  const cpu = sampleCpu(localEngineProcesses().filter((p) => p.name === engine));
  const started = performance.now();
  const result = await work();
  const [cost] = costPerWrite(cpu.stop(), performance.now() - started, units);
  return { result, cpuMsPerUnit: cost?.msPerWrite ?? Number.NaN };
}
