/**
 * The code and the docs cite the design contract as §N, §N.M and §N.M.K; this spec holds
 * every citation to docs/design.md, so a section that is renumbered, dropped or never written
 * fails the build instead of leaving comments that point at nothing.
 *
 * The scheme of docs/design.md: `## §N Title` and `### §N.M Title` are sections; a line
 * `K. …` at the start of a section's own text (before its first subsection) is item K of that
 * section, cited one level deeper (§5.3 is item 3 of §5, §6.3.5 is item 5 of §6.3, and
 * "§6.3 step 6" is item 6 of §6.3). A number that could name both a subsection and an item is
 * ambiguous and fails too. The §9 route table is held to the broker's routes.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DESIGN = 'docs/design.md';
const CITING_DIRS = ['packages', 'services', 'apps', 'bench', 'test', 'scripts', 'docs'];
const CITING_FILES = ['README.md'];

interface Section {
  number: string;
  heading: number;
  /** Numbers of the items in the section's own text. */
  items: Set<string>;
}

/** The sections of the contract by number, with their items. */
function sectionsOf(markdown: string): Map<string, Section> {
  const sections = new Map<string, Section>();
  let current: Section | undefined;
  let inFence = false;
  markdown.split('\n').forEach((line, index) => {
    if (line.startsWith('```')) inFence = !inFence;
    if (inFence) return;
    const heading = /^(#{2,3}) §(\d+(?:\.\d+)*) /.exec(line);
    if (heading?.[1] !== undefined && heading[2] !== undefined) {
      const number = heading[2];
      // `##` names §N, `###` names §N.M: a heading at the wrong depth is a scheme error.
      if (number.split('.').length !== heading[1].length - 1) throw new Error(`${DESIGN}:${index + 1}: ${line} is at the wrong heading depth`);
      if (sections.has(number)) throw new Error(`${DESIGN}:${index + 1}: §${number} is a heading twice`);
      current = { number, heading: index + 1, items: new Set() };
      sections.set(number, current);
      return;
    }
    if (/^#{1,3} /.test(line)) {
      current = undefined;
      return;
    }
    const item = /^(\d+)\. /.exec(line);
    if (current !== undefined && item?.[1] !== undefined) current.items.add(item[1]);
  });
  return sections;
}

/** Where a citation resolves: a section heading, or an item of its parent section. */
function resolves(sections: Map<string, Section>, citation: string): boolean {
  if (sections.has(citation)) return true;
  const dot = citation.lastIndexOf('.');
  if (dot < 0) return false;
  return sections.get(citation.slice(0, dot))?.items.has(citation.slice(dot + 1)) ?? false;
}

interface Citation {
  file: string;
  line: number;
  /** Without the §: `5.3`, or `6.3.6` for "§6.3 step 6". */
  number: string;
}

/** "§6.3", "§5.3", "§6.3.5", and "§6.3 step 6" / "§6.3 steps 2–6" (each step an item). */
function citationsIn(file: string, text: string): Citation[] {
  const found: Citation[] = [];
  text.split('\n').forEach((line, index) => {
    for (const match of line.matchAll(/§(\d+(?:\.\d+)*)(?: steps? (\d+)(?:[–-](\d+))?)?/g)) {
      const [, number, from, to] = match;
      if (number === undefined) continue;
      found.push({ file, line: index + 1, number });
      if (from === undefined) continue;
      for (let step = Number(from); step <= Number(to ?? from); step++) found.push({ file, line: index + 1, number: `${number}.${step}` });
    }
  });
  return found;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' || entry.name.startsWith('.') ? [] : filesUnder(path);
    return /\.(ts|md)$/.test(entry.name) ? [path] : [];
  });
}

const design = readFileSync(join(ROOT, DESIGN), 'utf8');
const sections = sectionsOf(design);
const citingFiles = [...CITING_DIRS.flatMap((dir) => filesUnder(join(ROOT, dir))), ...CITING_FILES.map((f) => join(ROOT, f))]
  .map((path) => relative(ROOT, path))
  .filter((file) => file !== DESIGN)
  .sort();
const citations = citingFiles.flatMap((file) => citationsIn(file, readFileSync(join(ROOT, file), 'utf8')));
const where = (c: Citation): string => `${c.file}:${c.line} cites §${c.number}`;

describe('docs/design.md, the design contract', () => {
  it('numbers its sections from §0 on, without gaps (a dropped section would orphan its citations)', () => {
    const top = [...sections.keys()].filter((n) => !n.includes('.'));
    expect(top.length).toBeGreaterThan(0);
    expect(top).toEqual(Array.from({ length: top.length }, (_, i) => String(i)));
  });

  it('never lets one number name both a subsection and an item', () => {
    const ambiguous = [...sections.values()].flatMap((s) =>
      [...s.items].filter((item) => sections.has(`${s.number}.${item}`)).map((item) => `§${s.number}.${item} (line ${s.heading})`),
    );
    expect(ambiguous).toEqual([]);
  });

  it('resolves its own cross-references', () => {
    expect(citationsIn(DESIGN, design).filter((c) => !resolves(sections, c.number)).map(where)).toEqual([]);
  });
});

describe('every § cited in the code and the docs', () => {
  it('finds citations to check (the scan itself works)', () => {
    expect(citations.length).toBeGreaterThan(100);
    expect(new Set(citations.map((c) => c.file.slice(c.file.lastIndexOf('.'))))).toEqual(new Set(['.ts', '.md']));
    expect(citations.some((c) => c.number.split('.').length === 3)).toBe(true);
  });

  it('resolves to a section or a numbered item of docs/design.md', () => {
    expect(citations.filter((c) => !resolves(sections, c.number)).map(where)).toEqual([]);
  });
});

/** `:id` → `{id}`; Fastify's `::` is a literal colon (`/v1/memories::batch`). */
const openApiPath = (fastifyPath: string): string =>
  fastifyPath.replaceAll('::', '\u0000').replace(/:([A-Za-z]+)/g, '{$1}').replaceAll('\u0000', ':');

describe('§9, the HTTP API v1 route table', () => {
  const routesDir = join(ROOT, 'services/retrieval-broker/src/routes');
  const routeFiles = readdirSync(routesDir).filter((f) => f.endsWith('.ts') && !f.includes('.spec.'));
  const sources = routeFiles.map((f) => ({ file: `services/retrieval-broker/src/routes/${f}`, text: readFileSync(join(routesDir, f), 'utf8') }));
  // The rendered OpenAPI document is a plugin's route, registered under its prefix.
  const pluginFile = 'services/retrieval-broker/src/api-reference.ts';
  const pluginRoutes = [...readFileSync(join(ROOT, pluginFile), 'utf8').matchAll(/routePrefix:\s*'([^']+)'/g)].map((m) => ({ file: pluginFile, route: `GET ${m[1] ?? ''}` }));

  const section9 = design.slice(design.indexOf('## §9 '), design.indexOf('## §10 '));
  const rows = [...section9.matchAll(/^\| (GET|POST|PUT|PATCH|DELETE) \| `([^`]+)` \|.*$/gm)].map((m) => ({
    route: `${m[1]} ${m[2]}`,
    planned: /being built/.test(m[0]),
  }));
  const documented = new Set(rows.map((r) => r.route));

  // app.get('/path', …), and the review helper of memories.ts, which registers POST routes.
  const served = [...sources.flatMap(({ file, text }) =>
    [...text.matchAll(/(?:app\.(get|post|put|patch|delete)|\breview)\(\s*'([^']+)'/g)].map((m) => ({
      file, route: `${(m[1] ?? 'post').toUpperCase()} ${openApiPath(m[2] ?? '')}`,
    })),
  ), ...pluginRoutes];
  // Every path literal of the route files, whatever registers it: none may go unlisted.
  const paths = sources.flatMap(({ file, text }) =>
    [...text.matchAll(/'(\/(?:v1\/[^']*|healthz|readyz|metrics|openapi\.json))'/g)].map((m) => ({ file, path: openApiPath(m[1] ?? '') })),
  );

  it('lists every route the broker serves', () => {
    expect(served.length).toBeGreaterThan(25);
    expect(served.filter((s) => !documented.has(s.route)).map((s) => `${s.file} serves ${s.route}, which §9 does not list`)).toEqual([]);
    const documentedPaths = new Set(rows.map((r) => r.route.split(' ')[1]));
    expect(paths.filter((p) => !documentedPaths.has(p.path)).map((p) => `${p.file} names ${p.path}, which §9 does not list`)).toEqual([]);
  });

  it('lists only routes the broker serves, or marks them as being built', () => {
    const servedRoutes = new Set(served.map((s) => s.route));
    expect(rows.filter((r) => !r.planned && !servedRoutes.has(r.route)).map((r) => `§9 lists ${r.route}, which no route file serves`)).toEqual([]);
  });
});
