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

/** The local engines' processes (infra/local/.run/<engine>/<engine>.pid), when this checkout runs them. */
export function localEngineProcesses(root: string): Array<{ name: string; pid: number }> {
  const run = path.join(root, 'infra/local/.run');
  if (!existsSync(run)) return [];
  return readdirSync(run).flatMap((engine) => {
    const file = path.join(run, engine, `${engine}.pid`);
    if (!existsSync(file)) return [];
    const pid = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && existsSync(`/proc/${pid}`) ? [{ name: engine, pid }] : [];
  });
}
