/**
 * `pnpm govbench`: the governance benchmark (design §12) on our runtime and the naive
 * baseline. `--help` lists the options. Progress goes to stderr, the markdown table to
 * stdout, JSON + markdown + SVG to bench-results/govbench/. No content or query is printed.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { GovClient } from './client.ts';
import { runGovbench } from './govbench.ts';
import { distributedClient, embeddedClient, urlClient } from './http-client.ts';
import { naiveClient } from './naive.ts';
import { markdownReport, svgChart, GATEMEM_PUBLISHED } from './report.ts';

const HELP = `pnpm govbench [options]
  --seed N            scenario seed (default 1): same seed, same checkpoints, same scores
  --episodes N        episodes per domain (default 6: about 2,300 checkpoints)
  --concurrency N     episodes run at once (default 4)
  --distributed       start the distributed stack (Kafka/ES/Redis from the env or infra/local) instead of the embedded runtime
  --url URL --credential FILE   a running runtime and its issuer credential file
  --no-baseline       skip the naive baseline
  --baseline-only     only the naive baseline
  --out DIR           output directory (default bench-results/govbench)`;

const { values } = parseArgs({
  options: {
    seed: { type: 'string', default: '1' }, episodes: { type: 'string', default: '6' }, concurrency: { type: 'string', default: '4' },
    distributed: { type: 'boolean', default: false }, url: { type: 'string' }, credential: { type: 'string' },
    'no-baseline': { type: 'boolean', default: false }, 'baseline-only': { type: 'boolean', default: false },
    out: { type: 'string', default: 'bench-results/govbench' }, help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(`${HELP}\n`);
  process.exit(0);
}
const int = (name: string, v: string | undefined): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    process.stderr.write(`--${name} must be a non-negative integer\n`);
    process.exit(2);
  }
  return n;
};
if (values.url && !values.credential) {
  process.stderr.write('--url needs --credential FILE (the issuer credential)\n');
  process.exit(2);
}

const seed = int('seed', values.seed);
const remote = Boolean(values.url) || values.distributed;
const systems: Array<() => Promise<GovClient>> = [];
if (!values['baseline-only']) {
  if (values.url) systems.push(async () => urlClient(String(values.url), String(values.credential)));
  else if (values.distributed) systems.push(() => distributedClient(`govbench-${randomBytes(4).toString('hex')}`));
  else systems.push(embeddedClient);
}
if (!values['no-baseline']) systems.push(async () => naiveClient());

const started = Date.now();
const progress = (line: string) => process.stderr.write(`[govbench +${((Date.now() - started) / 1000).toFixed(0)}s] ${line}\n`);
const { counts, runs } = await runGovbench(
  // Real time on a remote stack: deadlines and TTLs must outlast the setup of a loaded stack
  // (45 s, waited once per batch); a test clock just jumps a minute.
  { seed, episodesPerDomain: int('episodes', values.episodes), stepMs: remote ? 45_000 : 60_000 },
  systems,
  {
    concurrency: Math.max(1, int('concurrency', values.concurrency)),
    // A running stack may hold earlier runs: fresh tenants, same scenarios.
    ...(values.url ? { tenantPrefix: `r${randomBytes(3).toString('hex')}-` } : {}),
    jobTimeoutMs: remote ? 90_000 : 30_000,
    onEpisode: (episode, done, total) => progress(`${episode.id} done (${done}/${total})`),
  },
);

const scores = runs.map((r) => r.scores);
const markdown = markdownReport(scores, counts, seed);
const outDir = path.resolve(String(values.out));
mkdirSync(outDir, { recursive: true });
const at = new Date().toISOString();
const json = {
  at, seed, counts, gatemem: GATEMEM_PUBLISHED, scores,
  setupErrors: runs.flatMap((r) => r.run.setupErrors.map((e) => `${r.run.system}: ${e}`)),
  // Verdicts per checkpoint: ids, kinds and outcomes only.
  checkpoints: Object.fromEntries(runs.map((r) => [r.run.system, r.run.checkpoints])),
};
writeFileSync(path.join(outDir, 'latest.json'), `${JSON.stringify(json, null, 2)}\n`);
writeFileSync(path.join(outDir, 'latest.md'), markdown);
writeFileSync(path.join(outDir, 'latest.svg'), svgChart(scores));
process.stdout.write(markdown);
progress(`wrote ${path.relative(process.cwd(), outDir)}/latest.{json,md,svg}`);
for (const r of runs) if (r.run.setupErrors.length > 0) progress(`${r.run.system}: ${r.run.setupErrors.length} setup steps refused (see latest.json)`);
