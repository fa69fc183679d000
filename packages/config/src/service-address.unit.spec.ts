import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_SERVICE_URL, SERVICE_ADDRESS_FILE, serviceAddress, writeServiceAddress } from './service-address.ts';

describe('where a client finds the service', () => {
  const dirs: string[] = [];
  const dataDir = () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gm-address-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('takes the first setting given, then the running runtime’s address, then the default, and names which', () => {
    const dir = dataDir();
    expect(serviceAddress([['--url', undefined], ['MEMORY_URL', undefined]], dir)).toEqual({
      url: DEFAULT_SERVICE_URL, from: `the default: no MEMORY_URL, and no runtime running on ${dir} (set MEMORY_URL or MEMORY_DATA_DIR)`,
    });
    const forget = writeServiceAddress(dir, 'http://127.0.0.1:9191');
    expect(serviceAddress([['MEMORY_URL', undefined]], dir)).toEqual({
      url: 'http://127.0.0.1:9191', from: `the address the runtime running on ${dir} wrote to ${path.join(dir, SERVICE_ADDRESS_FILE)}`,
    });
    expect(serviceAddress([['--url', undefined], ['MEMORY_URL', 'http://10.0.0.1:1/'], ['MEMORY_API_URL', 'http://x:2']], dir))
      .toEqual({ url: 'http://10.0.0.1:1', from: 'MEMORY_URL' });
    expect(serviceAddress([['--url', ''], ['MEMORY_URL', undefined]], dir).from).toContain('the address the runtime running on');
    forget();
    expect(existsSync(path.join(dir, SERVICE_ADDRESS_FILE))).toBe(false);
  });

  it('ignores an address left by a runtime that is gone, and one it cannot read', () => {
    const dir = dataDir();
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    writeFileSync(path.join(dir, SERVICE_ADDRESS_FILE), JSON.stringify({ url: 'http://127.0.0.1:9292', pid: Number(gone.stdout) }));
    expect(serviceAddress([], dir).url).toBe(DEFAULT_SERVICE_URL);
    for (const text of ['{', '{"url":"not a url","pid":1}', `{"url":"http://127.0.0.1:9292","pid":"${process.pid}"}`]) {
      writeFileSync(path.join(dir, SERVICE_ADDRESS_FILE), text);
      expect(serviceAddress([], dir).url, text).toBe(DEFAULT_SERVICE_URL);
    }
  });

  it('leaves the file alone when another runtime wrote its own since', () => {
    const dir = dataDir();
    const forget = writeServiceAddress(dir, 'http://127.0.0.1:9393');
    const other = { url: 'http://127.0.0.1:9494', pid: process.ppid };
    writeFileSync(path.join(dir, SERVICE_ADDRESS_FILE), JSON.stringify(other));
    forget();
    expect(serviceAddress([], dir).url).toBe(other.url);
  });
});
