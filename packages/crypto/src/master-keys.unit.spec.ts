import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { loadMasterKeys } from './master-keys.ts';

async function keyFile(content: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'gm-master-key-'));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  const file = join(dir, 'master-keys.json');
  await writeFile(file, content);
  return file;
}

const configError = (text: string) => expect.objectContaining({ reason: 'MASTER_KEY_CONFIG', code: 'MEM_VALIDATION', message: expect.stringContaining(text) });

describe('loadMasterKeys', () => {
  it('reads one key from MEMORY_MASTER_KEY with id "env" (standard or url base64)', () => {
    const key = randomBytes(32);
    for (const text of [key.toString('base64'), key.toString('base64url')]) {
      const loaded = loadMasterKeys({ MEMORY_MASTER_KEY: text });
      expect(loaded.active).toBe('env');
      expect(loaded.keys.get('env')?.equals(key)).toBe(true);
    }
  });

  it('reads a key file with an active id and older keys kept for rotation', async () => {
    const k1 = randomBytes(32);
    const k2 = randomBytes(32);
    const file = await keyFile(JSON.stringify({ active: '2026-11', keys: { '2026-01': k1.toString('base64'), '2026-11': k2.toString('base64') } }));
    const loaded = loadMasterKeys({ MEMORY_MASTER_KEY_FILE: file });
    expect(loaded.active).toBe('2026-11');
    expect(loaded.keys.get('2026-01')?.equals(k1)).toBe(true);
    expect(loaded.keys.get('2026-11')?.equals(k2)).toBe(true);
  });

  it('fails clearly when no key, both sources, or a short, long or non-base64 key is configured', () => {
    expect(() => loadMasterKeys({})).toThrow(configError('no master key'));
    expect(() => loadMasterKeys({ MEMORY_MASTER_KEY: '  ' })).toThrow(configError('no master key'));
    expect(() => loadMasterKeys({ MEMORY_MASTER_KEY: randomBytes(32).toString('base64'), MEMORY_MASTER_KEY_FILE: '/x' })).toThrow(configError('not both'));
    expect(() => loadMasterKeys({ MEMORY_MASTER_KEY: randomBytes(16).toString('base64') })).toThrow(configError('got 16'));
    expect(() => loadMasterKeys({ MEMORY_MASTER_KEY: randomBytes(33).toString('base64') })).toThrow(configError('got 33'));
    expect(() => loadMasterKeys({ MEMORY_MASTER_KEY: 'not a key!' })).toThrow(configError('not base64'));
  });

  it('fails clearly on a malformed key file', async () => {
    const good = randomBytes(32).toString('base64');
    const cases: Array<[string, string]> = [
      ['{', 'not JSON'],
      [JSON.stringify({ keys: { a: good } }), 'expected {"active"'],
      [JSON.stringify({ active: 'b', keys: { a: good } }), 'active master key "b" is not among the keys (a)'],
      [JSON.stringify({ active: 'a', keys: { a: randomBytes(31).toString('base64') } }), 'key "a": a master key must be 32 bytes'],
      [JSON.stringify({ active: 'a b', keys: { 'a b': good } }), 'master key id "a b"'],
    ];
    for (const [content, text] of cases) {
      const file = await keyFile(content);
      expect(() => loadMasterKeys({ MEMORY_MASTER_KEY_FILE: file }), content).toThrow(configError(text));
    }
    expect(() => loadMasterKeys({ MEMORY_MASTER_KEY_FILE: '/nonexistent/keys.json' })).toThrow(configError('cannot be read'));
  });
});
