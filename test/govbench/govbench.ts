import type { GovClient } from './client.ts';
import { generate, type GenerateOptions } from './generator.ts';
import type { Checkpoint, Episode } from './model.ts';
import { runEpisodes, type RunOptions, type RunResult } from './runner.ts';
import { score, type Scores } from './scoring.ts';

export interface Counts { total: number; perDomain: Record<string, number>; perKind: Record<string, number>; perCategory: Record<string, number> }

/** Every checkpoint of the episodes, the convergence reads included. */
export function checkpointsOf(episodes: Episode[]): Checkpoint[] {
  return episodes.flatMap((e) => e.steps.flatMap((s) => {
    if (s.type === 'checkpoint') return [s.checkpoint];
    if ('convergence' in s && s.convergence) return [s.convergence];
    return [];
  }));
}

export function countCheckpoints(episodes: Episode[]): Counts {
  const all = checkpointsOf(episodes);
  const tally = (key: (c: Checkpoint) => string) => {
    const out: Record<string, number> = {};
    for (const c of all) out[key(c)] = (out[key(c)] ?? 0) + 1;
    return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
  };
  return { total: all.length, perDomain: tally((c) => c.domain), perKind: tally((c) => c.kind), perCategory: tally((c) => c.category) };
}

export interface SystemRun { run: RunResult; scores: Scores }

/** The same scenario stream through every system, one after the other (they share nothing). */
export async function runGovbench(
  generateOptions: GenerateOptions, systems: Array<() => Promise<GovClient>>, runOptions: RunOptions = {},
): Promise<{ episodes: Episode[]; counts: Counts; runs: SystemRun[] }> {
  const episodes = generate(generateOptions);
  const runs: SystemRun[] = [];
  for (const start of systems) {
    const client = await start();
    try {
      const run = await runEpisodes(client, episodes, runOptions);
      runs.push({ run, scores: score(run) });
    } finally {
      await client.close();
    }
  }
  return { episodes, counts: countCheckpoints(episodes), runs };
}
