import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ERASED_CONTENT, TOPICS } from '@gm/contracts';
import { eventually, memory, startTestRuntime, STARTUP_MS, type EmbeddedTestRuntime } from './harness.ts';
import { cryptoSuite } from './suites/crypto.suite.ts';

/** Encryption at rest and crypto-shredding on the embedded runtime; test/distributed runs it on the stack. */
cryptoSuite((env) => startTestRuntime(env));

/** Transit keys are per hour: only the embedded runtime's test clock can move past one. */
describe('transit keys of memory.commands', () => {
  let rt: EmbeddedTestRuntime;
  let writer: string;
  beforeAll(async () => {
    rt = await startTestRuntime();
    writer = await rt.issue({ agentId: 'support-bot', principal: { id: 'alice', kind: 'person' } });
  }, STARTUP_MS);
  afterAll(async () => rt?.close(), STARTUP_MS);

  const commandContents = async (): Promise<Map<string, string>> => {
    const reader = await rt.logReader();
    const contents = new Map<string, string>();
    try {
      for await (const m of reader.log.readAll(TOPICS.commands)) {
        const command = m.value as { type: string; data: { id?: string; content?: string } };
        if (command.type === 'WriteMemory' && command.data.id && command.data.content) contents.set(command.data.id, command.data.content);
      }
    } finally {
      await reader.close();
    }
    return contents;
  };

  it('destroys a past hour’s transit key once write-admission consumed its commands: the forgotten write command is unreadable too', async () => {
    const content = 'Kestrel keeps the boat keys at the marina office';
    expect((await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'tk-1', subjectId: 'cust-tk', content }) })).status).toBe(201);
    const forget = await rt.api('POST', '/v1/subjects/cust-tk/forget', { token: writer, body: {} });
    await eventually('forget verified', async () => {
      const res = await rt.api('GET', `/v1/deletion-jobs/${forget.body.jobId}`, { token: writer });
      return res.body.status === 'verified' ? true : undefined;
    });
    // The events are shredded at once; the command copy waits for its hour's transit key.
    expect((await commandContents()).get('tk-1')).toBe(content);
    expect(await rt.runtime.sweepTransitKeys()).toBe(0);

    await rt.advance(2 * 60 * 60 * 1000);
    expect(await rt.runtime.sweepTransitKeys()).toBe(1);
    expect((await commandContents()).get('tk-1')).toBe(ERASED_CONTENT);
    // Writing goes on under the new hour's key (with a fresh capability: the first one expired meanwhile).
    writer = await rt.issue({ agentId: 'support-bot', principal: { id: 'alice', kind: 'person' } });
    expect((await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'tk-2', subjectId: 'cust-tk2', content: 'Later fact' }) })).status).toBe(201);
    expect((await commandContents()).get('tk-2')).toBe('Later fact');
  });
});

/** The master key beside the ciphertext protects nothing against a copy of the directory: said at start. */
describe('where the master key lives', () => {
  const warning = 'the master key is inside the data directory';
  const warned = (rt: EmbeddedTestRuntime) => rt.logs.lines.filter((l) => l.includes(warning)).map((l) => JSON.parse(l) as Record<string, unknown>);

  it('warns at start when the master key is the default file inside the data directory, naming the file and the remedy, and not when it lives elsewhere', async () => {
    const beside = await startTestRuntime();
    let keyFile: string;
    try {
      const [line] = warned(beside);
      expect(line).toMatchObject({ level: 40, masterKeyFile: beside.masterKeyFile(), dataDir: beside.dataDir });
      expect(String(line?.msg)).toContain('MEMORY_MASTER_KEY_FILE');
      keyFile = path.join(mkdtempSync(path.join(os.tmpdir(), 'gm-key-')), 'master-keys.json');
      copyFileSync(beside.masterKeyFile(), keyFile);
    } finally {
      await beside.close();
    }
    const elsewhere = await startTestRuntime({ MEMORY_MASTER_KEY_FILE: keyFile });
    try {
      expect(warned(elsewhere)).toEqual([]);
      // A file named by the env var but inside the data directory is still beside the data.
      const inside = path.join(elsewhere.dataDir, 'my-key.json');
      copyFileSync(keyFile, inside);
      await elsewhere.restartWith({ MEMORY_MASTER_KEY_FILE: inside });
      expect(warned(elsewhere)).toHaveLength(1);
    } finally {
      await elsewhere.close();
      rmSync(path.dirname(keyFile), { recursive: true, force: true });
    }
  }, 2 * STARTUP_MS);
});
