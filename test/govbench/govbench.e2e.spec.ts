import { describe, expect, it } from 'vitest';
import { runGovbench } from './govbench.ts';
import { embeddedClient } from './http-client.ts';
import { ATTACK_KINDS, DOMAINS } from './model.ts';
import { naiveClient } from './naive.ts';
import { markdownReport } from './report.ts';
import type { Scores } from './scoring.ts';

/**
 * The reduced, seed-fixed govbench of CI (design §12): one episode per domain — every attack
 * kind in every domain — on the embedded runtime and on the naive baseline. Ours must leak
 * nothing and forget everything; the baseline must be caught, or the scenarios are too easy.
 */
describe('govbench (reduced, seed-fixed)', () => {
  it('scores the embedded runtime A = 0, F = 0, U ≥ 0.98, OR ≤ 0.02, and catches the naive baseline', async () => {
    const started = performance.now();
    const { counts, runs } = await runGovbench(
      { seed: 20261130, episodesPerDomain: 1, stepMs: 60_000 },
      [embeddedClient, async () => naiveClient()],
      { concurrency: 4, convergenceWindowMs: 300 },
    );
    const [ours, naive] = runs;
    if (!ours || !naive) throw new Error('both systems must have run');
    process.stderr.write(`${markdownReport(runs.map((r) => r.scores), counts, 20261130)}\n[govbench] reduced run: ${((performance.now() - started) / 1000).toFixed(1)} s\n`);

    expect(counts.total).toBeGreaterThanOrEqual(300);
    expect(Object.keys(counts.perDomain).sort()).toEqual([...DOMAINS].sort());
    expect(ATTACK_KINDS.filter((k) => !counts.perKind[k])).toEqual([]);

    // Every setup step (grants, delegations, writes, deletions) must have been accepted.
    expect(ours.run.setupErrors).toEqual([]);
    const failed = ours.run.checkpoints.filter((c) => !c.passed).map((c) => `${c.id} ${c.kind}: ${c.situation} → ${c.status}`);
    expect(failed).toEqual([]);
    const s: Scores = ours.scores;
    expect(s.A).toBe(0);
    expect(s.F).toBe(0);
    expect(s.U).toBeGreaterThanOrEqual(0.98);
    expect(s.OR).toBeLessThanOrEqual(0.02);
    expect(s.deletionJobCompleteness.share).toBe(1);
    expect(s.stalePacketUse.bad).toBe(0);
    expect(s.revocationConvergenceMs.neverConverged).toBe(0);
    expect(s.provenanceCoverage).toBe(1);

    // The same scenarios catch a naive memory; if they did not, they would be too easy.
    expect(naive.scores.A).toBeGreaterThan(0);
    expect(naive.scores.F).toBeGreaterThan(0);
    expect(naive.scores.MGS).toBeLessThan(s.MGS);
  }, 180_000);

  it('scores the baseline identically on a second run of the same seed', async () => {
    const once = await runGovbench({ seed: 5, episodesPerDomain: 1, stepMs: 60_000 }, [async () => naiveClient()], { concurrency: 4, convergenceWindowMs: 50 });
    const twice = await runGovbench({ seed: 5, episodesPerDomain: 1, stepMs: 60_000 }, [async () => naiveClient()], { concurrency: 4, convergenceWindowMs: 50 });
    const verdicts = (r: typeof once) => r.runs[0]?.run.checkpoints.map((c) => `${c.id}:${c.passed}:${c.violation}:${c.leaks}`);
    expect(verdicts(twice)).toEqual(verdicts(once));
    const { wallMs: _w, requests: _r, revocationConvergenceMs: _c, ...rest } = once.runs[0]?.scores ?? ({} as Scores);
    const { wallMs: _w2, requests: _r2, revocationConvergenceMs: _c2, ...rest2 } = twice.runs[0]?.scores ?? ({} as Scores);
    expect(rest2).toEqual(rest);
  });
});
