import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_SERVICE_URL, SERVICE_ADDRESS_FILE, serviceAddress, writeServiceAddress } from './service-address.ts';

describe('where a client finds the service', () => {
  const dirs: string[] = [];
  /** A data directory whose lock `holder` holds, as a running runtime's is (this process by default). */
  const dataDir = (holder = process.pid) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gm-address-'));
    dirs.push(dir);
    writeFileSync(path.join(dir, 'runtime.lock'), String(holder));
    return dir;
  };
  afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('takes the first setting given, then the running runtime’s address, then the default, and names which', () => {
    const dir = dataDir();
    expect(serviceAddress([['--url', undefined], ['MEMORY_URL', undefined]], dir)).toEqual({
      url: DEFAULT_SERVICE_URL, from: `the default: no MEMORY_URL, and no runtime running on ${dir} (set MEMORY_URL or MEMORY_DATA_DIR)`, source: 'default',
    });
    // The runtime's own port setting moves the default, which stays a default (proven before use).
    expect(serviceAddress([], dir, '9393')).toMatchObject({ url: 'http://127.0.0.1:9393', source: 'default' });
    expect(serviceAddress([], dir, '0').url).toBe(DEFAULT_SERVICE_URL);
    expect(() => serviceAddress([], dir, '80a')).toThrow('MEMORY_PORT is not a port: "80a"');
    const forget = writeServiceAddress(dir, 'http://127.0.0.1:9191');
    expect(serviceAddress([['MEMORY_URL', undefined]], dir)).toEqual({
      url: 'http://127.0.0.1:9191', from: `the address the runtime running on ${dir} wrote to ${path.join(dir, SERVICE_ADDRESS_FILE)}`, source: 'runtime',
    });
    expect(serviceAddress([['--url', undefined], ['MEMORY_URL', 'http://10.0.0.1:1/'], ['MEMORY_API_URL', 'http://x:2']], dir))
      .toEqual({ url: 'http://10.0.0.1:1', from: 'MEMORY_URL', source: 'setting' });
    expect(serviceAddress([['--url', ''], ['MEMORY_URL', undefined]], dir).from).toContain('the address the runtime running on');
    forget();
    expect(existsSync(path.join(dir, SERVICE_ADDRESS_FILE))).toBe(false);
  });

  it('ignores an address left by a runtime that is gone, and one it cannot read', () => {
    const dir = dataDir();
    const gone = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    writeFileSync(path.join(dir, SERVICE_ADDRESS_FILE), JSON.stringify({ url: 'http://127.0.0.1:9292', pid: Number(gone.stdout) }), { mode: 0o600 });
    writeFileSync(path.join(dir, 'runtime.lock'), gone.stdout);
    expect(serviceAddress([], dir).url).toBe(DEFAULT_SERVICE_URL);
    for (const text of ['{', '{"url":"not a url","pid":1}', `{"url":"http://127.0.0.1:9292","pid":"${process.pid}"}`]) {
      writeFileSync(path.join(dir, 'runtime.lock'), String(process.pid));
      writeFileSync(path.join(dir, SERVICE_ADDRESS_FILE), text, { mode: 0o600 });
      expect(serviceAddress([], dir).url, text).toBe(DEFAULT_SERVICE_URL);
    }
  });

  it('leaves the file alone when another runtime wrote its own since', () => {
    const dir = dataDir();
    const forget = writeServiceAddress(dir, 'http://127.0.0.1:9393');
    const other = { url: 'http://127.0.0.1:9494', pid: process.ppid };
    writeFileSync(path.join(dir, SERVICE_ADDRESS_FILE), JSON.stringify(other), { mode: 0o600 });
    writeFileSync(path.join(dir, 'runtime.lock'), String(process.ppid));
    forget();
    expect(serviceAddress([], dir).url).toBe(other.url);
  });

  it('writes a runtime listening on every interface as the loopback address', () => {
    const dir = dataDir();
    writeServiceAddress(dir, 'http://0.0.0.0:9595');
    expect(serviceAddress([], dir).url).toBe('http://127.0.0.1:9595');
  });

  it('believes no file that someone else could have planted: clients send their capability, memctl the issuer credential, where it points', () => {
    const planted = (url: string, pid = process.pid) => JSON.stringify({ url, pid });
    const cases: Array<[string, (dir: string) => void]> = [
      ['an address off this machine', (dir) => writeFileSync(path.join(dir, SERVICE_ADDRESS_FILE), planted('http://203.0.113.7:8080'), { mode: 0o600 })],
      ['https, or another scheme', (dir) => writeFileSync(path.join(dir, SERVICE_ADDRESS_FILE), planted('https://127.0.0.1:8080'), { mode: 0o600 })],
      ['a process that does not hold the lock', (dir) => {
        writeFileSync(path.join(dir, SERVICE_ADDRESS_FILE), planted('http://127.0.0.1:9696', 1), { mode: 0o600 });
      }],
      ['a file others may write', (dir) => {
        writeFileSync(path.join(dir, SERVICE_ADDRESS_FILE), planted('http://127.0.0.1:9696'));
        chmodSync(path.join(dir, SERVICE_ADDRESS_FILE), 0o666);
      }],
      ['a directory others may write', (dir) => {
        writeFileSync(path.join(dir, SERVICE_ADDRESS_FILE), planted('http://127.0.0.1:9696'), { mode: 0o600 });
        chmodSync(dir, 0o777);
      }],
      ['a symlink', (dir) => {
        const elsewhere = path.join(dataDir(), 'address.json');
        writeFileSync(elsewhere, planted('http://127.0.0.1:9696'), { mode: 0o600 });
        symlinkSync(elsewhere, path.join(dir, SERVICE_ADDRESS_FILE));
      }],
    ];
    for (const [what, plant] of cases) {
      const dir = dataDir();
      plant(dir);
      expect(serviceAddress([], dir).url, what).toBe(DEFAULT_SERVICE_URL);
    }
  });
});
