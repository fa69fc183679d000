/**
 * The workspace's dependencies tell the truth: every package (library, service, app, the test
 * and bench packages, and the root with its scripts) lists exactly the workspace packages it
 * imports, and reaches another package only by its name, never by a relative path into its
 * folder. pnpm links what package.json lists, so an unlisted import works only by accident
 * of hoisting, and a listed one nobody imports draws an arrow that is not there.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SOURCE = /\.(ts|tsx|mts|js|mjs)$/;
const SKIP_DIRS = new Set(['node_modules', 'dist', '.data', '.cache', 'test-results', 'coverage']);

interface WorkspacePackage {
  name: string;
  dir: string;
  listed: Set<string>;
}

/** The workspace's packages: the root and every folder the globs of pnpm-workspace.yaml name. */
function workspacePackages(): WorkspacePackage[] {
  const yaml = readFileSync(path.join(ROOT, 'pnpm-workspace.yaml'), 'utf8');
  const globs = [...yaml.matchAll(/^\s+-\s+(\S+)\s*$/gm)].map((m) => m[1] ?? '').filter((g) => g !== '');
  const dirs = globs.flatMap((glob) => {
    if (!glob.endsWith('/*')) return [path.join(ROOT, glob)];
    const parent = path.join(ROOT, glob.slice(0, -2));
    // A folder without package.json (a package removed, its untracked node_modules left behind) is no package to pnpm either.
    return readdirSync(parent).map((entry) => path.join(parent, entry))
      .filter((dir) => statSync(dir).isDirectory() && existsSync(path.join(dir, 'package.json')));
  });
  return [ROOT, ...dirs].map((dir) => {
    const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as {
      name: string; dependencies?: Record<string, string>; devDependencies?: Record<string, string>;
    };
    const listed = Object.keys({ ...manifest.dependencies, ...manifest.devDependencies }).filter(isWorkspaceName);
    return { name: manifest.name, dir, listed: new Set(listed) };
  });
}

const isWorkspaceName = (specifier: string) => specifier.startsWith('@gm/');
const packageNameOf = (specifier: string) => specifier.split('/').slice(0, 2).join('/');

/** The package whose folder holds `file`: the deepest one (the root holds them all). */
function ownerOf(file: string, packages: WorkspacePackage[]): WorkspacePackage {
  const owners = packages.filter((p) => file === p.dir || file.startsWith(`${p.dir}${path.sep}`));
  const owner = owners.sort((a, b) => b.dir.length - a.dir.length)[0];
  if (owner === undefined) throw new Error(`${file} is in no workspace package`);
  return owner;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    if (SKIP_DIRS.has(entry) || entry.startsWith('.')) return [];
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) return sourceFiles(full);
    return SOURCE.test(entry) && !entry.endsWith('.d.ts') ? [full] : [];
  });
}

/** Every module specifier of a file: imports, re-exports, dynamic imports, `import type`. */
const specifiersOf = (file: string): string[] =>
  ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles.map((f) => f.fileName);

const packages = workspacePackages();
const imports = sourceFiles(ROOT).map((file) => ({ file, owner: ownerOf(file, packages), specifiers: specifiersOf(file) }));
const relative = (file: string) => path.relative(ROOT, file);

describe('workspace dependencies', () => {
  it('finds the packages and their sources', () => {
    expect(packages.length).toBeGreaterThan(20);
    expect(imports.length).toBeGreaterThan(300);
  });

  it('every workspace package a file imports is listed in its package.json', () => {
    const unlisted = imports.flatMap(({ file, owner, specifiers }) => specifiers
      .filter(isWorkspaceName)
      .map(packageNameOf)
      .filter((name) => name !== owner.name && !owner.listed.has(name))
      .map((name) => `${relative(file)} imports ${name}, which ${owner.name} does not list`));
    expect(unlisted).toEqual([]);
  });

  it('every workspace package a package.json lists is imported by one of its files', () => {
    const unused = packages.flatMap((p) => [...p.listed]
      .filter((name) => !imports.some(({ owner, specifiers }) => owner === p && specifiers.some((s) => isWorkspaceName(s) && packageNameOf(s) === name)))
      .map((name) => `${p.name} lists ${name} and imports nothing of it`));
    expect(unused).toEqual([]);
  });

  it('no relative import reaches into another package\'s folder', () => {
    const reaching = imports.flatMap(({ file, owner, specifiers }) => specifiers
      .filter((s) => s.startsWith('.'))
      .map((s) => ({ s, target: path.resolve(path.dirname(file), s) }))
      .filter(({ target }) => ownerOf(target, packages) !== owner)
      .map(({ s, target }) => `${relative(file)} imports ${s} (${ownerOf(target, packages).name}): import it by its package name`));
    expect(reaching).toEqual([]);
  });

  it('no package lists itself, and no package is listed twice', () => {
    expect(packages.filter((p) => p.listed.has(p.name)).map((p) => p.name)).toEqual([]);
    const names = packages.map((p) => p.name);
    expect(names.filter((name, i) => names.indexOf(name) !== i)).toEqual([]);
  });
});
