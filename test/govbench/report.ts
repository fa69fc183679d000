import type { Scores } from './scoring.ts';

/** GateMem's published numbers, cited as such (rzhub/GateMem, MIT): not measured here. */
export const GATEMEM_PUBLISHED = {
  citation: 'GateMem paper, best published MGS 80.1; retrieval-based 9–57',
  bestMgs: 80.1,
  bestSystem: 'long-context GPT-5.4, medical',
  retrievalRange: [9, 57] as const,
};

const pct = (x: number): string => `${(100 * x).toFixed(1)}%`;
const ms = (x: number | null): string => (x === null ? '—' : `${x.toFixed(1)} ms`);

/** The markdown report: headline scores, GateMem's published reference, per domain, per attack kind. */
export function markdownReport(scores: Scores[], counts: { total: number; perDomain: Record<string, number>; perKind: Record<string, number> }, seed: number): string {
  const lines: string[] = [];
  lines.push(`### govbench — seed ${seed}, ${counts.total} checkpoints`, '');
  lines.push('| system | checkpoints | U | A | F | OR | MGS | false denials | revocation convergence p50 / p95 | deletion jobs complete | stale packet use | provenance coverage |');
  lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const s of scores) {
    const c = s.revocationConvergenceMs;
    const never = c.neverConverged > 0 ? ` (${c.neverConverged}/${c.n} never)` : '';
    lines.push(
      `| ${s.system} | ${s.checkpoints} | ${pct(s.U)} | ${pct(s.A)} | ${pct(s.F)} | ${pct(s.OR)} | **${s.MGS.toFixed(1)}** | ${pct(s.falseDenialRate)} | ` +
        `${ms(c.p50)} / ${ms(c.p95)}${never} | ${s.deletionJobCompleteness.complete}/${s.deletionJobCompleteness.n} | ` +
        `${s.stalePacketUse.bad}/${s.stalePacketUse.n} | ${pct(s.provenanceCoverage)} |`,
    );
  }
  lines.push(`| ${GATEMEM_PUBLISHED.citation.split(';')[0]} (${GATEMEM_PUBLISHED.bestSystem}) | — | — | — | — | — | ${GATEMEM_PUBLISHED.bestMgs} | — | — | — | — | — |`);
  lines.push(`| GateMem paper, retrieval-based systems | — | — | — | — | — | ${GATEMEM_PUBLISHED.retrievalRange.join('–')} | — | — | — | — | — |`);
  lines.push('', 'GateMem numbers are quoted from the paper, not measured here: it scores whole agents on its own tasks; govbench scores the memory layer on deterministic scenarios with the same formula, MGS = 100·U·(1−A)·(1−F).', '');

  lines.push('#### Per domain (MGS; U / A / F)', '');
  lines.push(`| domain | checkpoints | ${scores.map((s) => s.system).join(' | ')} |`);
  lines.push(`|---|---|${scores.map(() => '---').join('|')}|`);
  for (const [domain, n] of Object.entries(counts.perDomain)) {
    const cells = scores.map((s) => {
      const d = s.perDomain[domain];
      return d ? `${d.MGS.toFixed(1)} (${pct(d.U)} / ${pct(d.A)} / ${pct(d.F)})` : '—';
    });
    lines.push(`| ${domain} | ${n} | ${cells.join(' | ')} |`);
  }
  lines.push('', '#### Per attack kind (violation rate; for `utility`: authorized requests not fully answered)', '');
  lines.push(`| kind | checkpoints | ${scores.map((s) => s.system).join(' | ')} |`);
  lines.push(`|---|---|${scores.map(() => '---').join('|')}|`);
  for (const [kind, n] of Object.entries(counts.perKind)) {
    const cells = scores.map((s) => {
      const k = s.perKind[kind];
      return k ? `${pct(k.rate)} (${k.bad}/${k.n})` : '—';
    });
    lines.push(`| ${kind} | ${n} | ${cells.join(' | ')} |`);
  }
  return `${lines.join('\n')}\n`;
}

const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * A hand-written SVG: MGS bars for every measured system next to GateMem's published best
 * and its retrieval-based range, then A and F bars per system.
 */
export function svgChart(scores: Scores[]): string {
  const left = 260;
  const width = 760;
  const barMax = width - left - 70;
  const rowH = 26;
  const x = (v: number) => left + (barMax * v) / 100;
  const parts: string[] = [];
  let y = 40;
  parts.push(`<text x="12" y="24" font-size="16" font-weight="bold">govbench: memory governance score (MGS = 100·U·(1−A)·(1−F))</text>`);
  const bar = (label: string, value: number, color: string, note = value.toFixed(1)) => {
    parts.push(`<text x="${left - 8}" y="${y + 17}" font-size="12" text-anchor="end">${esc(label)}</text>`);
    parts.push(`<rect x="${left}" y="${y + 4}" width="${(barMax * value) / 100}" height="${rowH - 8}" fill="${color}"/>`);
    parts.push(`<text x="${x(value) + 6}" y="${y + 17}" font-size="12">${esc(note)}</text>`);
    y += rowH;
  };
  for (const s of scores) bar(s.system, s.MGS, s.system.startsWith('ours') ? '#2b7a3d' : '#b23b3b');
  bar('GateMem paper: best published (cited)', GATEMEM_PUBLISHED.bestMgs, '#7f7f7f');
  const [lo, hi] = GATEMEM_PUBLISHED.retrievalRange;
  parts.push(`<text x="${left - 8}" y="${y + 17}" font-size="12" text-anchor="end">GateMem paper: retrieval-based (cited)</text>`);
  parts.push(`<rect x="${x(lo)}" y="${y + 4}" width="${x(hi) - x(lo)}" height="${rowH - 8}" fill="#bdbdbd"/>`);
  parts.push(`<text x="${x(hi) + 6}" y="${y + 17}" font-size="12">${lo}–${hi}</text>`);
  y += rowH + 20;

  parts.push(`<text x="12" y="${y}" font-size="14" font-weight="bold">violation rates: A (access control), F (active forgetting); utility U</text>`);
  y += 10;
  for (const s of scores) {
    bar(`${s.system} — A`, 100 * s.A, '#d9822b', pct(s.A));
    bar(`${s.system} — F`, 100 * s.F, '#8e44ad', pct(s.F));
    bar(`${s.system} — U`, 100 * s.U, '#2f6db5', pct(s.U));
  }
  for (const v of [0, 25, 50, 75, 100]) {
    parts.push(`<line x1="${x(v)}" y1="34" x2="${x(v)}" y2="${y}" stroke="#ddd" stroke-width="1"/>`);
    parts.push(`<text x="${x(v)}" y="${y + 14}" font-size="10" text-anchor="middle">${v}</text>`);
  }
  y += 24;
  parts.push(`<text x="12" y="${y}" font-size="10">${esc(GATEMEM_PUBLISHED.citation)} — quoted, not measured here.</text>`);
  // Grid lines first so the bars draw over them.
  const grid = parts.filter((p) => p.startsWith('<line'));
  const rest = parts.filter((p) => !p.startsWith('<line'));
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${y + 12}" font-family="sans-serif">\n<rect width="100%" height="100%" fill="white"/>\n${[...grid, ...rest].join('\n')}\n</svg>\n`;
}
