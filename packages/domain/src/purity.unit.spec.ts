/**
 * Style: domain and contracts have no IO and no clock, so replaying the log always gives the
 * same events. This test reads their sources and fails on an IO import or a hidden clock or
 * random source; it may use node:fs itself because it is not domain code.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const DOMAIN_SRC = fileURLToPath(new URL('.', import.meta.url));
const CONTRACTS_SRC = fileURLToPath(new URL('../../contracts/src/', import.meta.url));
const PACKAGES = join(DOMAIN_SRC, '..', '..');

const FORBIDDEN_PACKAGES = ['kafkajs', 'ioredis', 'better-sqlite3'];
const BUILTINS = new Set(builtinModules);

const isForbiddenModule = (specifier: string): boolean =>
  specifier.startsWith('node:') ||
  BUILTINS.has(specifier.split('/')[0] ?? specifier) ||
  FORBIDDEN_PACKAGES.includes(specifier) ||
  specifier.startsWith('@elastic/');

const IMPORT_PATTERNS = [
  /\bfrom\s*['"]([^'"]+)['"]/g, // import … from 'x', export … from 'x'
  /\bimport\s*['"]([^'"]+)['"]/g, // import 'x'
  /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g, // import('x')
  /\brequire\s*\(\s*['"]([^'"]+)['"]\s*\)/g, // require('x')
];

const CLOCK_AND_RANDOM: Array<[RegExp, string]> = [
  [/\bDate\.now\s*\(/, 'Date.now()'],
  [/\bDate\s*\(\s*\)/, 'new Date() without an argument'],
  [/\bMath\.random\s*\(/, 'Math.random()'],
  [/\bperformance\.now\s*\(/, 'performance.now()'],
  [/\bcrypto\.(randomUUID|getRandomValues)\s*\(/, 'crypto randomness'],
  [/\bprocess\./, 'process (env, clock, IO)'],
];

/** Comments may explain the rule ("never Date.now() here"); only code counts. */
const stripComments = (source: string): string =>
  source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:\\])\/\/.*$/gm, '$1');

function violations(source: string): string[] {
  const code = stripComments(source);
  const found: string[] = [];
  for (const pattern of IMPORT_PATTERNS) {
    for (const match of code.matchAll(pattern)) {
      const specifier = match[1];
      if (specifier !== undefined && isForbiddenModule(specifier)) found.push(`imports ${specifier}`);
    }
  }
  for (const [pattern, what] of CLOCK_AND_RANDOM) if (pattern.test(code)) found.push(`uses ${what}`);
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

describe('domain and contracts purity (style: no IO, no clock)', () => {
  const files = [...sourceFiles(DOMAIN_SRC), ...sourceFiles(CONTRACTS_SRC)];

  it('reads the decider, ranking and contract sources', () => {
    const names = files.map((f) => relative(PACKAGES, f));
    expect(names).toEqual(expect.arrayContaining([
      join('domain', 'src', 'memory', 'decide.ts'),
      join('domain', 'src', 'memory', 'evolve.ts'),
      join('domain', 'src', 'ranking', 'rank.ts'),
      join('contracts', 'src', 'commands.ts'),
    ]));
    expect(names.some((n) => n.endsWith('.spec.ts'))).toBe(false);
  });

  it('finds no IO import, clock or random source in any of them', () => {
    const offenders = files
      .map((file) => ({ file: relative(PACKAGES, file), found: violations(readFileSync(file, 'utf8')) }))
      .filter(({ found }) => found.length > 0);
    expect(offenders).toEqual([]);
  });

  it('catches each forbidden import and call, and lets pure code through', () => {
    const bad = [
      "import { readFileSync } from 'node:fs';",
      "import fs from 'fs';",
      "import { readFile } from 'fs/promises';",
      "import { createHash } from 'crypto';",
      "import { Kafka } from 'kafkajs';",
      "import { Client } from '@elastic/elasticsearch';",
      "import Redis from 'ioredis';",
      "import Database from 'better-sqlite3';",
      "export { x } from 'node:path';",
      "const m = await import('node:os');",
      "import 'node:process';",
      'const t = Date.now();',
      'const t = new Date();',
      'const t = new Date( );',
      'const r = Math.random();',
    ];
    for (const line of bad) expect(violations(line), line).not.toEqual([]);

    const good = [
      "import { z } from 'zod';",
      "import type { MemoryEvent } from '@gm/contracts';",
      "import { fold } from './evolve.ts';",
      'const t = new Date(nowMs + 1000).toISOString();',
      'const ms = Date.parse(command.metadata.now);',
      '// never call Date.now() or new Date() here',
      '/** Math.random() would break replay */',
      "const uri = 'https://example.org/a';",
    ];
    for (const line of good) expect(violations(line), line).toEqual([]);
  });
});
