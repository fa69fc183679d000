import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryEvent, TOPICS } from '@gm/contracts';
import { openStores, replayDataDir, systemClock } from '@gm/embedded';
import { apiClient, capabilityIssuer, eventually, memory } from './harness.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** One process, as `pnpm start` runs it (tsx as a loader, so a kill reaches the server itself). */
const NODE_ARGS = ['--import', 'tsx', 'apps/embedded/src/main.ts'];

interface Running {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
}

/** Starts the real `pnpm start` entry point as its own process and waits for its banner. */
async function startProcess(dataDir: string, env: Record<string, string> = {}): Promise<Running> {
  const child = spawn(process.execPath, NODE_ARGS, {
    cwd: ROOT,
    env: { ...process.env, MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let stderr = '';
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(stderr);
      if (match?.[1]) resolve(match[1]);
    });
    void exited.then((code) => reject(new Error(`exited ${code}: ${stderr}`)));
  });
  return { child, url, exited };
}

/** A capability for stream-bot, with the member grant its actions need (see the harness). */
function issue(url: string, dataDir: string): Promise<string> {
  const credential = () => readFileSync(path.join(dataDir, 'issuer-credential'), 'utf8').trim();
  return capabilityIssuer(apiClient(() => url), credential)({ agentId: 'stream-bot', actions: ['write', 'read', 'search'] });
}

describe('embedded runtime as a process', () => {
  const dirs: string[] = [];
  const tempDir = () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gm-proc-'));
    dirs.push(dir);
    return dir;
  };
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('runs the README walkthrough end to end (scripts/walkthrough.sh), again on the same memory, and stops at the first step that differs', async () => {
    const dataDir = tempDir();
    const proc = await startProcess(dataDir);
    /** The walkthrough's exit code and everything it printed, with this run suffix. */
    const walk = (run: string) => new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn('bash', ['scripts/walkthrough.sh', proc.url, dataDir], { cwd: ROOT, env: { ...process.env, WALKTHROUGH_RUN: run }, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (c: Buffer) => (output += c.toString()));
      child.stderr.on('data', (c: Buffer) => (output += c.toString()));
      child.on('exit', (code) => resolve({ code, output }));
    });
    try {
      const { code, output } = await walk('a1');
      expect(code, output).toBe(0);
      expect(output).toContain('201 tool-1-a1 v1 quarantined\n');
      expect(output).toContain('1 item(s): pref-1-a1\n');
      expect(output).toContain('2 item(s): pref-1-a1, tool-1-a1\n');
      expect(output).toContain('1 item(s): pref-2-a1\n');
      expect(output).toContain('0 item(s)\n');
      expect(output).toContain('status=verified records=pref-1-a1,pref-2-a1,tool-1-a1\n');
      // Acks arrive from three consumer groups, so their order is not part of the contract.
      expect(/^evidence=([^\n]*)/m.exec(output)?.[1]?.trim().split(' ').sort()).toEqual(
        ['evidence_packet:done', 'key:done', 'keyword:done', 'primary:done', 'retrieval_cache:done', 'summary:done', 'vector:done', 'verification:done'],
      );
      // Again, with fresh ids: the same story.
      const again = await walk('b2');
      expect(again.code, again.output).toBe(0);
      expect(again.output).toContain('status=verified records=pref-1-b2,pref-2-b2,tool-1-b2\n');
      // With the first run's ids, forgotten and retired for good: it stops at step 2, and says why.
      const retired = await walk('a1');
      expect(retired.code).toBe(1);
      expect(retired.output).toMatch(/walkthrough: step 2 expected "201 pref-1-a1 v1 active", got "409 [^"]*"\n$/);
    } finally {
      proc.child.kill('SIGTERM');
      await proc.exited;
    }
  });

  /** `pnpm start` until its banner is complete: what it printed on stderr (the banner) and on stdout (the log). */
  async function startUntilBanner(env: Record<string, string> = {}): Promise<{ printed: string; logged: string }> {
    const child = spawn(process.execPath, NODE_ARGS, {
      cwd: ROOT, env: { ...process.env, MEMORY_PORT: '0', MEMORY_DATA_DIR: tempDir(), ...env }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    // The banner goes to stderr; the log (JSON, where the warning is) to stdout.
    let printed = '';
    let logged = '';
    child.stdout?.on('data', (c: Buffer) => (logged += c.toString()));
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    try {
      await new Promise<void>((resolve, reject) => {
        child.stderr?.on('data', (c: Buffer) => {
          printed += c.toString();
          if (printed.includes('Ctrl-C to stop')) resolve();
        });
        void exited.then(() => reject(new Error(`exited before its banner: ${printed}`)));
      });
    } finally {
      child.kill('SIGTERM');
      await exited;
    }
    return { printed, logged };
  }

  it('logs one readable line an entry when asked (a terminal gets that by default), JSON otherwise', async () => {
    const { logged } = await startUntilBanner({ MEMORY_LOG_FORMAT: 'pretty' });
    const lines = logged.trim().split('\n');
    expect(lines.filter((l) => l.startsWith('{'))).toEqual([]);
    expect(lines.find((l) => l.includes('the master key is inside the data directory'))).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] WARN \(governed-memory\): the master key/);
    const json = await startUntilBanner();
    expect(json.logged.trim().split('\n').every((l) => l.startsWith('{'))).toBe(true);
  });

  it('prints the banner docs/operations.md shows, line for line, and says once that the master key lies in the data directory', async () => {
    const { printed, logged } = await startUntilBanner();
    // What a line is about: its label, or the words before its first value.
    const label = (line: string) => /^(governed memory \(embedded runtime\) listening on|started in|[^:]+:)/.exec(line)?.[1] ?? line;
    const readme = readFileSync(path.join(ROOT, 'docs', 'operations.md'), 'utf8');
    const start = readme.indexOf('governed memory (embedded runtime) listening on');
    const sample = readme.slice(start, readme.indexOf('```', start)).trim().split('\n');
    const from = printed.indexOf('governed memory (embedded runtime) listening on');
    const banner = printed.slice(from, printed.indexOf('\n', printed.indexOf('Ctrl-C to stop'))).trim().split('\n');
    expect(banner.map(label)).toEqual(sample.map(label));
    expect(`${logged}${printed}`.split('the master key is inside the data directory')).toHaveLength(2);
  });

  it('fails fast with a clear message on invalid configuration', async () => {
    const child = spawn(process.execPath, NODE_ARGS, {
      cwd: ROOT, env: { ...process.env, MEMORY_PORT: 'eighty', MEMORY_PACKET_TTL: 'soon', MEMORY_DATA_DIR: tempDir() }, stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toContain('MEMORY_PORT');
    expect(stderr).toContain('MEMORY_PACKET_TTL');
  });

  it('refuses to start on a data directory made with another MEMORY_PARTITIONS, naming the topic and both counts', async () => {
    const dataDir = tempDir();
    const first = await startProcess(dataDir, { MEMORY_PARTITIONS: '4' });
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const child = spawn(process.execPath, NODE_ARGS, {
      cwd: ROOT, env: { ...process.env, MEMORY_PORT: '0', MEMORY_DATA_DIR: dataDir, MEMORY_PARTITIONS: '6' }, stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toMatch(/topic "memory\.commands" has 4 partitions, but 6 were asked for/);
    // Nothing was changed: the directory still starts with its own count.
    const again = await startProcess(dataDir, { MEMORY_PARTITIONS: '4' });
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  });

  it('refuses to start with an invalid policy set, naming the file and the problem (embedded and the distributed broker)', async () => {
    const policyDir = tempDir();
    copyFileSync(path.join(ROOT, 'packages/policy/policies/schema.cedarschema'), path.join(policyDir, 'schema.cedarschema'));
    // Valid Cedar syntax, but `colour` is no attribute of a partition in the schema.
    writeFileSync(path.join(policyDir, 'default.cedar'), 'permit (principal, action, resource) when { resource.colour == "red" };\n');
    const run = async (entry: string, env: Record<string, string>) => {
      const child = spawn(process.execPath, ['--import', 'tsx', entry], { cwd: ROOT, env: { ...process.env, ...env, MEMORY_POLICY_DIR: policyDir }, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      return { code, stderr };
    };
    const embedded = await run('apps/embedded/src/main.ts', { MEMORY_PORT: '0', MEMORY_DATA_DIR: tempDir() });
    expect(embedded.code).toBe(2);
    expect(embedded.stderr).toMatch(/invalid policy set: .*default\.cedar.*colour/s);
    const broker = await run('services/retrieval-broker/src/main.ts', {
      KAFKA_BROKERS: '127.0.0.1:1', REDIS_URL: 'redis://127.0.0.1:1', ELASTICSEARCH_URL: 'http://127.0.0.1:1',
      MEMORY_SIGNING_KEY_FILE: '/nonexistent', MEMORY_ISSUER_CREDENTIAL_FILE: '/nonexistent',
    });
    expect(broker.code).toBe(2);
    expect(broker.stderr).toMatch(/retrieval-broker: invalid policy set: .*default\.cedar.*colour/s);
  });

  it('loses no acknowledged write when killed with SIGKILL mid-stream, and replays to the same state', async () => {
    const dataDir = tempDir();
    let proc = await startProcess(dataDir);
    const token = await issue(proc.url, dataDir);
    const acknowledged = new Map<string, string>();
    let attempted = 0;
    const writer = async (lane: number) => {
      for (let i = 0; ; i += 1) {
        const id = `w-${lane}-${i}`;
        const content = `Stream lane ${lane} item ${i} kestrel`;
        attempted += 1;
        try {
          const res = await fetch(`${proc.url}/v1/memories`, {
            method: 'POST',
            headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
            body: JSON.stringify(memory({ id, subjectId: `subj-${i % 5}`, content })),
          });
          if (res.status === 201) acknowledged.set(id, content);
        } catch {
          return; // the process is gone: this write was never acknowledged
        }
      }
    };
    const lanes = [0, 1, 2, 3].map(writer);
    await eventually('80 acknowledged writes', async () => acknowledged.size >= 80, 60_000);
    proc.child.kill('SIGKILL');
    await Promise.all(lanes);
    await proc.exited;
    expect(acknowledged.size).toBeGreaterThanOrEqual(80);

    proc = await startProcess(dataDir);
    const token2 = await issue(proc.url, dataDir);
    for (const [id, content] of acknowledged) {
      const res = await fetch(`${proc.url}/v1/memories/${id}`, { headers: { authorization: `Bearer ${token2}` } });
      expect(res.status, id).toBe(200);
      expect(((await res.json()) as { content: string }).content).toBe(content);
    }
    proc.child.kill('SIGTERM');
    expect(await proc.exited).toBe(0);

    // Every event exactly once, versions strictly increasing per record.
    const stores = await openStores(dataDir, 4, systemClock);
    const seen = new Set<string>();
    const versions = new Map<string, number>();
    for await (const message of stores.crypto.view(stores.bus, 'open').readAll(TOPICS.events)) {
      const event = MemoryEvent.parse(message.value);
      expect(seen.has(event.metadata.eventId)).toBe(false);
      seen.add(event.metadata.eventId);
      if (event.type === 'MemoryWritten') {
        const previous = versions.get(event.data.record.id) ?? 0;
        expect(event.data.record.version).toBe(previous + 1);
        versions.set(event.data.record.id, event.data.record.version);
      }
    }
    await stores.close();
    for (const id of acknowledged.keys()) expect(versions.get(id)).toBe(1);
    expect(versions.size).toBeLessThanOrEqual(attempted);

    const report = await replayDataDir(dataDir, 4);
    expect(report.identical).toBe(true);
    expect(report.events).toBe(seen.size);
  });
});
