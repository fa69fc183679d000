import { existsSync, lstatSync, readFileSync, renameSync, rmSync, writeFileSync, type Stats } from 'node:fs';
import path from 'node:path';
import { proveRuntime } from './runtime-proof.ts';

/**
 * Where a client finds the service, decided one way for memctl and the MCP server (docs/agents.md
 * "Where the service is"): an explicit setting first; else the address the embedded runtime
 * running on the data directory wrote there when it started listening; else the default port. The
 * answer names the setting that chose it, so a failure to connect can say what to change. A
 * default is where anyone on the host could listen: `trustedServiceAddress` sends nothing secret
 * there before the server proved it is the runtime of the data directory (runtime-proof.ts).
 */
export const DEFAULT_SERVICE_URL = 'http://127.0.0.1:8080';

/** The file in the data directory that holds the running embedded runtime's address. */
export const SERVICE_ADDRESS_FILE = 'service-address.json';

export interface ServiceAddress {
  url: string;
  /** The setting that chose `url`, in words a person can act on. */
  from: string;
  /** `setting`: configured; `runtime`: the believed address file; `default`: nobody said, so it must be proven. */
  source: 'setting' | 'runtime' | 'default';
}

/** The file in the data directory naming the process that holds it (the embedded runtime's lock). */
export const RUNTIME_LOCK_FILE = 'runtime.lock';

/**
 * Whether process `pid` runs: a file naming a process that is gone was left by a kill. With
 * `mine`, only a process of this user counts (one that refuses our signal, EPERM, is another's).
 */
export function processAlive(pid: number, { mine = false }: { mine?: boolean } = {}): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return !mine && (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Records where the runtime on `dataDir` listens. Written whole (a temporary file renamed), so a
 * reader never sees half of it. The returned function removes it, unless another process has
 * written its own since.
 */
export function writeServiceAddress(dataDir: string, listening: string): () => void {
  const file = path.join(dataDir, SERVICE_ADDRESS_FILE);
  // Listening on every interface (0.0.0.0, ::) includes the loopback one, which is what a client here reaches.
  const url = listening.replace(/^http:\/\/(?:0\.0\.0\.0|\[::\])(?=:)/, 'http://127.0.0.1');
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify({ url, pid: process.pid })}\n`, { mode: 0o600 });
  renameSync(temporary, file);
  return () => {
    if (readServiceAddressFile(file)?.pid === process.pid) rmSync(file, { force: true });
  };
}

function readServiceAddressFile(file: string): { url: string; pid: number } | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as { url?: unknown; pid?: unknown };
    if (typeof parsed.url !== 'string' || !URL.canParse(parsed.url) || !Number.isInteger(parsed.pid)) return undefined;
    return { url: parsed.url, pid: parsed.pid as number };
  } catch {
    return undefined;
  }
}

/**
 * Whether a file in the data directory can speak for the runtime: the directory and the file are
 * this user's, nobody else may write them, and the file is no symlink. Clients send their
 * capability — memctl the issuer credential — to the address it names, so a file someone else
 * could have planted (a checkout, an unpacked archive, a shared directory) is not believed.
 */
function ownedByMe(stats: Stats | undefined, othersMayNot: number): boolean {
  if (stats === undefined || stats.isSymbolicLink()) return false;
  const uid = process.getuid?.();
  return (uid === undefined || stats.uid === uid) && (stats.mode & othersMayNot) === 0;
}

/** Only the loopback interface: the runtime on this machine, never an address elsewhere. */
function loopback(url: string): boolean {
  const { protocol, hostname } = new URL(url);
  return protocol === 'http:' && (/^127(?:\.\d{1,3}){3}$/.test(hostname) || hostname === 'localhost' || hostname === '[::1]');
}

/** The process holding the data directory's lock (lock.ts in the embedded runtime). */
function lockHolder(dataDir: string): number | undefined {
  try {
    const pid = Number(readFileSync(path.join(dataDir, RUNTIME_LOCK_FILE), 'utf8').trim());
    return Number.isInteger(pid) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The address of the runtime running on `dataDir`, or undefined when none runs there. Believed
 * only when the directory and the file are this user's and no one else's to write, the address is
 * on the loopback interface, and the process that wrote it holds the directory's lock and runs
 * (a file left by a killed runtime names a process that is gone).
 */
export function runningServiceAddress(dataDir: string): ServiceAddress | undefined {
  const file = path.join(dataDir, SERVICE_ADDRESS_FILE);
  if (!ownedByMe(lstatSync(dataDir, { throwIfNoEntry: false }), 0o022) || !ownedByMe(lstatSync(file, { throwIfNoEntry: false }), 0o077)) return undefined;
  const found = readServiceAddressFile(file);
  if (found === undefined || !loopback(found.url) || lockHolder(dataDir) !== found.pid || !processAlive(found.pid, { mine: true })) return undefined;
  return { url: found.url, from: `the address the runtime running on ${dataDir} wrote to ${file}`, source: 'runtime' };
}

/**
 * The precedence, first that is set: `settings` in the order given (e.g. `--url`, `MEMORY_URL`,
 * an older alias), the running runtime's address in `dataDir`, the default: 127.0.0.1 on
 * `defaultPort` — the runtime's own `MEMORY_PORT` when the caller passes it — else 8080.
 */
export function serviceAddress(
  settings: ReadonlyArray<readonly [name: string, value: string | undefined]>, dataDir: string, defaultPort?: string,
): ServiceAddress {
  // A trailing slash would double the one every route starts with.
  for (const [name, value] of settings) if (value !== undefined && value !== '') return { url: value.replace(/\/+$/, ''), from: name, source: 'setting' };
  const running = runningServiceAddress(dataDir);
  if (running !== undefined) return running;
  // 0 asks the runtime for any free port: it names no port a client could try.
  if (defaultPort === undefined || defaultPort === '' || defaultPort === '0') {
    return { url: DEFAULT_SERVICE_URL, from: `the default: no MEMORY_URL, and no runtime running on ${dataDir} (set MEMORY_URL or MEMORY_DATA_DIR)`, source: 'default' };
  }
  const port = Number(defaultPort);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new RangeError(`MEMORY_PORT is not a port: "${defaultPort}"`);
  return {
    url: `http://127.0.0.1:${port}`,
    from: `the default on MEMORY_PORT: no MEMORY_URL, and no runtime running on ${dataDir} (set MEMORY_URL or MEMORY_DATA_DIR)`,
    source: 'default',
  };
}

/**
 * `serviceAddress`, safe to send a secret to: a configured address or the believed address file
 * as they are; a default only once the server there proved it is the runtime of `dataDir`
 * (design §9.2), else UnprovenServiceError naming why and `setting`, the variable to set.
 */
export async function trustedServiceAddress(
  settings: ReadonlyArray<readonly [name: string, value: string | undefined]>, dataDir: string, defaultPort?: string, setting = 'MEMORY_URL',
): Promise<ServiceAddress> {
  const address = serviceAddress(settings, dataDir, defaultPort);
  if (address.source === 'default') await proveRuntime(address.url, dataDir, setting);
  return address;
}
