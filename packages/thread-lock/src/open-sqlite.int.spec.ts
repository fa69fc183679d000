import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fileWriteLock } from './file-write-locks.ts';
import { openSqlite, type SqliteFile } from './open-sqlite.ts';

describe('openSqlite', () => {
  let dir: string;
  const opened: SqliteFile[] = [];
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'gm-open-sqlite-'));
  });
  afterEach(() => {
    for (const file of opened.splice(0)) file.db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const open = (...args: Parameters<typeof openSqlite>): SqliteFile => {
    const file = openSqlite(...args);
    opened.push(file);
    return file;
  };
  const setting = (file: SqliteFile, name: string): unknown => file.db.pragma(name, { simple: true });

  it('opens a source of truth in WAL mode, fully synchronous, waiting 5 s for another process', () => {
    const file = open(path.join(dir, 'log.db'), { synchronous: 'FULL' });
    expect(file.journalMode).toBe('wal');
    expect(setting(file, 'journal_mode')).toBe('wal');
    expect(setting(file, 'synchronous')).toBe(2); // FULL
    expect(setting(file, 'busy_timeout')).toBe(5000);
  });

  it('opens a projection at NORMAL, with the secure_delete and page cache it asks for', () => {
    const erasing = open(path.join(dir, 'state.db'), { synchronous: 'NORMAL', secureDelete: true, cacheKiB: 65_536 });
    expect(setting(erasing, 'synchronous')).toBe(1); // NORMAL
    expect(setting(erasing, 'secure_delete')).toBe(1);
    expect(setting(erasing, 'cache_size')).toBe(-65_536);
    const plain = open(path.join(dir, 'index.db'), { synchronous: 'NORMAL', secureDelete: false });
    expect(setting(plain, 'secure_delete')).toBe(0);
  });

  it('hands out the file’s one write lock of this thread, and none for an in-memory database', () => {
    const file = path.join(dir, 'keys.db');
    const first = open(file, { synchronous: 'FULL' });
    expect(first.writeLock).toBeDefined();
    expect(first.writeLock).toBe(fileWriteLock(file));
    expect(open(file, { synchronous: 'FULL' }).writeLock).toBe(first.writeLock);
    const memory = open(':memory:', { synchronous: 'FULL' });
    expect(memory.writeLock).toBeUndefined();
    expect(memory.journalMode).toBe('memory');
  });
});
