/**
 * The two adapters of the bus port stand side by side: what both need (the logger, the wake-up
 * signal, the key partitioner, the handler attempt) lives in `src/` beside the port; neither
 * adapter's folder imports from the other's, and the shared modules import from neither, so no
 * path leads from one adapter into the other. This test reads the sources and fails on an
 * import that crosses.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('.', import.meta.url));
const ADAPTERS = ['embedded', 'kafka'] as const;
/** The package's entry: it exports both adapters, so it may import both, and nothing in the package may import it. */
const ENTRY = join(SRC, 'index.ts');
/** This spec quotes crossing imports as data. */
const THIS_SPEC = fileURLToPath(import.meta.url);

const IMPORT_PATTERNS = [
  /\bfrom\s*['"]([^'"]+)['"]/g, // import … from 'x', export … from 'x'
  /\bimport\s*['"]([^'"]+)['"]/g, // import 'x'
  /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g, // import('x')
];

/** Comments may name the other adapter ("like the embedded log"); only code counts. */
const stripComments = (source: string): string =>
  source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:\\])\/\/.*$/gm, '$1');

/** The relative specifiers of `source`, resolved against the folder of the file that holds it. */
function relativeImports(file: string, source: string): string[] {
  const code = stripComments(source);
  return IMPORT_PATTERNS.flatMap((pattern) => [...code.matchAll(pattern)])
    .map((match) => match[1])
    .filter((specifier): specifier is string => specifier !== undefined && specifier.startsWith('.'))
    .map((specifier) => resolve(dirname(file), specifier));
}

/** The adapter folder `path` lies in, if any. */
function adapterOf(path: string): string | undefined {
  const [first] = relative(SRC, path).split(/[\\/]/);
  return ADAPTERS.find((adapter) => adapter === first);
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/**
 * Every import from a file of one adapter into the other adapter's folder, from a shared module
 * (outside both folders) into either of them, and of the package's entry.
 */
function crossings(files: readonly string[], read: (file: string) => string): string[] {
  return files.flatMap((file) => {
    const from = adapterOf(file);
    return relativeImports(file, read(file))
      .filter((target) => {
        const to = adapterOf(target);
        return (to !== undefined && to !== from) || target === ENTRY;
      })
      .map((target) => `${relative(SRC, file)} → ${relative(SRC, target)}`);
  });
}

describe('bus adapters stand on their own', () => {
  const files = tsFiles(SRC).filter((file) => file !== ENTRY && file !== THIS_SPEC);

  it('reads both adapter folders and the shared modules', () => {
    const names = files.map((f) => relative(SRC, f));
    expect(names).toEqual(expect.arrayContaining([
      join('kafka', 'kafka-bus.ts'), join('kafka', 'kafka-subscription.ts'), join('embedded', 'sqlite-bus.ts'), 'handler-attempt.ts', 'port.ts',
    ]));
  });

  it('finds no import from kafka/ into embedded/, nor the other way, nor from a shared module into either', () => {
    expect(crossings(files, (file) => readFileSync(file, 'utf8'))).toEqual([]);
  });

  it('catches every form of a crossing import, and lets shared and same-folder imports through', () => {
    const kafkaFile = join(SRC, 'kafka', 'kafka-bus.ts');
    const check = (line: string): string[] => crossings([kafkaFile], () => line);
    const bad = [
      "import type { BusLogger } from '../embedded/group-consumer.ts';",
      "import { Signal } from '../embedded/signal.ts';",
      "export { partitionForKey } from '../embedded/partitioner.ts';",
      "const m = await import('../embedded/sqlite-log.ts');",
      "import '../embedded/linger.ts';",
    ];
    for (const line of bad) expect(check(line), line).not.toEqual([]);

    const good = [
      "import type { BusLogger } from '../bus-logger.ts';",
      "import { Signal } from '../signal.ts';",
      "import { Topics } from './kafka-topics.ts';",
      "import { Kafka } from 'kafkajs';",
      '// like the embedded adapter (../embedded/sqlite-bus.ts)',
    ];
    for (const line of good) expect(check(line), line).toEqual([]);

    const shared = join(SRC, 'handler-attempt.ts');
    expect(crossings([shared], () => "import type { BusLogger } from './embedded/group-consumer.ts';")).not.toEqual([]);
    expect(crossings([shared], () => "import { Groups } from './kafka/kafka-groups.ts';")).not.toEqual([]);
    expect(crossings([shared], () => "import { createKafkaBus } from './index.ts';")).not.toEqual([]);
    expect(crossings([shared], () => "import type { Bus } from './port.ts';")).toEqual([]);
  });
});
