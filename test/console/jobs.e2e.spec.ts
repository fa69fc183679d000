import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'puppeteer-core';
import { eventually, memory, startTestRuntime, TestClock, type EmbeddedTestRuntime } from '../e2e/harness.ts';
import { buildConsole, fill, inPage, launchBrowser, screenshot, signIn, textOnceItContains } from './browser.ts';

/**
 * The runtime's clock running at the wall clock's pace (moved on by `advance` as well): a job's
 * steps then carry the instants they happened at, as on a real deployment, instead of all
 * sharing the test clock's one standing instant. The pipeline threads read the shared cell.
 */
class RunningClock extends TestClock {
  private skew = 0;
  private readonly timer = setInterval(() => {
    this.ms = Date.now() + this.skew;
  }, 1);

  constructor() {
    super(Date.now());
    this.timer.unref();
  }

  override advance(ms: number): void {
    this.skew += ms;
    this.ms = Date.now() + this.skew;
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/** What the console shows for an instant: UTC to the second. */
const utc = (iso: string) => `${new Date(iso).toISOString().slice(0, 10)} ${new Date(iso).toISOString().slice(11, 19)} UTC`;
const UTC_TEXT = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/;

interface EvidenceRow { target: string; sentence: string; ref: string }

/**
 * The deletion-job pages as a compliance officer reads them (docs/console.md), in Debian's
 * Chromium against the embedded runtime: evidence in words with a legend, times in UTC to the
 * second, the list newest first and narrowed to one subject.
 */
describe('the deletion-job pages in a browser', () => {
  let rt: EmbeddedTestRuntime;
  let clock: RunningClock;
  let browser: Browser;
  let page: Page | undefined;
  let consoleDir: string;
  let dataDir: string;
  let writer: string;
  let officer: string;

  beforeAll(async () => {
    consoleDir = await buildConsole();
    clock = new RunningClock();
    // Its own data directory: the harness removes only one it made itself.
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'gm-console-jobs-'));
    rt = await startTestRuntime({ MEMORY_CONSOLE_DIR: consoleDir }, { dataDir, clock });
    browser = await launchBrowser();
    writer = await rt.issue({ agentId: 'support-bot', principal: { id: 'alice', kind: 'person' }, actions: ['write', 'read', 'search', 'request_delete'] });
    officer = await rt.issue({ agentId: 'compliance-desk', principal: { id: 'frank', kind: 'person' }, scopes: [{ kind: 'project', id: 'maple' }, { kind: 'tenant', id: 'acme' }], actions: ['admin', 'request_delete'] });
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await rt?.close();
    clock?.stop();
    rmSync(consoleDir, { recursive: true, force: true });
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const open = async (token: string, hash = '#/'): Promise<Page> => {
    await page?.close();
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    await signIn(page, rt.url, token);
    await inPage(page, `window.location.hash = ${JSON.stringify(hash)}`);
    return page;
  };
  /** A subject's records, found by an agent's search (`word` in each), then forgotten; answers the job once its receipt is signed. */
  const verifiedForget = async (subjectId: string, word: string, contents: string[]): Promise<string> => {
    for (const [i, content] of contents.entries()) {
      expect((await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: `${subjectId}-${i}`, subjectId, content }) })).status).toBe(201);
    }
    await eventually(`the records of ${subjectId} are found by search`, async () =>
      (await rt.api('POST', '/v1/search', { token: writer, body: { query: word, mode: 'lexical' } })).body.items?.length === contents.length);
    const forget = await rt.api('POST', `/v1/subjects/${subjectId}/forget`, { token: writer, body: {} });
    expect(forget.status).toBe(202);
    const jobId = String(forget.body.jobId);
    await eventually(`the forget of ${subjectId} verified with its receipt`, async () =>
      (await rt.api('GET', `/v1/deletion-jobs/${jobId}/receipt`, { token: officer })).status === 200, 60_000);
    return jobId;
  };
  const openVerifiedJob = async (jobId: string): Promise<Page> => {
    const p = await open(officer, `#/jobs/${jobId}`);
    await textOnceItContains(p, '[data-testid="job-status"]', 'verified');
    expect(await textOnceItContains(p, '[data-testid="receipt-verdict"]', 'valid')).not.toContain('invalid');
    return p;
  };
  const evidenceRows = (p: Page) => inPage<EvidenceRow[]>(p, `[...document.querySelectorAll('[data-testid="job-evidence"] tbody tr')].map((tr) => ({
    target: tr.getAttribute('data-target'),
    sentence: tr.querySelector('[data-testid="evidence-sentence"]')?.textContent ?? '',
    ref: tr.querySelector('td:last-child')?.textContent ?? '',
  }))`);
  const listedJobIds = (p: Page) => p.$$eval('[data-testid="job-row"]', (rows) => rows.map((r) => r.getAttribute('data-job-id') ?? ''));

  it('says in words what each target\'s evidence means, with a legend for every counter', async () => {
    const jobId = await verifiedForget('cust-ev', 'Ocelot', ['Ocelot clinic notes a penicillin allergy', 'Ocelot clinic moved the check-up to Friday']);
    const p = await openVerifiedJob(jobId);
    const rows = await evidenceRows(p);
    const byTarget = new Map(rows.map((r) => [r.target, r]));

    // The search index dropped the records at their tombstones: "removed=0" reads as that, not as nothing deleted.
    const keyword = byTarget.get('keyword');
    expect(keyword?.ref).toBe('removed=0;remaining=0');
    expect(keyword?.sentence).toMatch(/^removed when the records were tombstoned, by the index-builder \(before this step ran/);
    expect(keyword?.sentence).toContain('0 copies remain');
    expect(byTarget.get('primary')).toMatchObject({ ref: 'removed=2;remaining=0', sentence: expect.stringMatching(/^removed 2 copies from the primary content store; 0 copies remain/) as unknown });
    expect(byTarget.get('key')?.sentence).toMatch(/^destroyed \d+ data keys.*no longer decrypt/);
    for (const row of rows) expect([row.target, row.sentence]).not.toEqual([row.target, expect.stringMatching(/^(evidence:|no evidence|not answered)/) as unknown]);

    // Every counter on the page has its line in the legend.
    const keys = new Set(rows.flatMap((r) => r.ref.split(';').filter((part) => part !== '').map((part) => part.split('=')[0] ?? '')));
    expect([...keys]).toEqual(expect.arrayContaining(['removed', 'remaining', 'data_keys', 'key_residue', 'copies']));
    const legend = await inPage<Record<string, string>>(p, `Object.fromEntries([...document.querySelectorAll('[data-testid="evidence-legend"] [data-key]')]
      .map((el) => [el.getAttribute('data-key'), el.querySelector('dd')?.textContent ?? '']))`);
    for (const key of keys) {
      expect(legend[key], key).toBeDefined();
      expect(legend[key], key).not.toContain('does not describe');
    }
    expect(legend.remaining).toContain('0 is the goal');
    await screenshot(p, 'deletion-job-receipt');
  }, 120_000);

  it('shows every time on a job\'s page in UTC to the second, and its timeline in order with the time since the request', async () => {
    const jobId = await verifiedForget('cust-time', 'Tapir', ['Tapir account renewal is due in March']);
    const p = await openVerifiedJob(jobId);
    const times = await p.$$eval('main time', (els) => els.map((el) => ({ datetime: el.getAttribute('datetime') ?? '', text: el.textContent ?? '' })));
    expect(times.length).toBeGreaterThan(10);
    for (const time of times) expect(time.text).toBe(utc(time.datetime));

    const steps = await inPage<Array<{ datetime: string; text: string; offset: string; what: string }>>(p, `[...document.querySelectorAll('[data-testid="timeline-step"]')].map((tr) => ({
      datetime: tr.querySelector('time')?.getAttribute('datetime') ?? '',
      text: tr.querySelector('time')?.textContent ?? '',
      offset: tr.querySelector('[data-testid="timeline-offset"]')?.textContent ?? '',
      what: tr.querySelector('td:last-child')?.textContent ?? '',
    }))`);
    expect(steps[0]).toMatchObject({ what: 'requested', offset: '+0 s' });
    const requestedMs = Date.parse(steps[0]?.datetime ?? '');
    for (const [i, step] of steps.entries()) {
      expect(step.text).toMatch(UTC_TEXT);
      // "+1.4 s": the time since the request, to a tenth of a second (a job here takes seconds, not minutes).
      const shown = /^\+(\d+(?:\.\d)?) s$/.exec(step.offset);
      expect(shown, step.offset).not.toBeNull();
      expect(Math.abs(Number(shown?.[1]) * 1000 - (Date.parse(step.datetime) - requestedMs)), step.offset).toBeLessThanOrEqual(50);
      if (i > 0) expect(Date.parse(step.datetime)).toBeGreaterThanOrEqual(Date.parse(steps[i - 1]?.datetime ?? ''));
    }
    expect(steps.map((s) => s.what)).toEqual(expect.arrayContaining(['keyword target answered: done', 'completed: verified', 'receipt signed']));
    expect(await p.$eval('[data-testid="job-completed-at"] time', (el) => el.textContent ?? '')).toMatch(UTC_TEXT);
  }, 120_000);

  it('lists the newest jobs first, flips to oldest first, and narrows the list to one subject', async () => {
    const jobs: string[] = [];
    for (const subjectId of ['cust-list-a', 'cust-list-b', 'cust-list-a']) {
      // A second apart, so that the order is the order of the requests' times.
      clock.advance(1_000);
      const forget = await rt.api('POST', `/v1/subjects/${subjectId}/forget`, { token: writer, body: {} });
      jobs.push(String(forget.body.jobId));
    }
    const [first, second, third] = jobs;
    const p = await open(officer, '#/jobs');
    await p.waitForSelector(`[data-testid="job-row"][data-job-id="${third}"]`);
    expect((await listedJobIds(p)).slice(0, 3)).toEqual([third, second, first]);
    expect(await p.$eval('[data-testid="jobs"] caption', (el) => el.textContent ?? '')).toContain('newest first');
    const listedTimes = await p.$$eval('[data-testid="job-row"] time', (els) => els.map((el) => ({ datetime: el.getAttribute('datetime') ?? '', text: el.textContent ?? '' })));
    for (const time of listedTimes) expect(time.text).toBe(utc(time.datetime));
    await screenshot(p, 'deletion-jobs');

    await p.select('[data-testid="order-filter"]', 'oldest');
    await textOnceItContains(p, '[data-testid="jobs"] caption', 'oldest first');
    // The caption follows the select at once; the rows follow once the page of that order arrived.
    await p.waitForFunction(`[...document.querySelectorAll('[data-testid="job-row"]')].map((r) => r.getAttribute('data-job-id')).filter((id) => ${JSON.stringify(jobs)}.includes(id)).join() === ${JSON.stringify([first, second, third].join())}`);
    const oldestFirst = await listedJobIds(p);
    expect(oldestFirst.filter((id) => jobs.includes(id))).toEqual([first, second, third]);
    expect(oldestFirst.indexOf(first ?? '')).toBeGreaterThan(0);

    await p.select('[data-testid="order-filter"]', 'newest');
    await fill(p, '[data-testid="subject-filter"]', 'cust-list-a');
    await p.click('[data-testid="apply-filter"]');
    await p.waitForFunction(`[...document.querySelectorAll('[data-testid="job-row"]')].map((r) => r.getAttribute('data-job-id')).join() === ${JSON.stringify([third, first].join())}`);
    expect(await p.$$eval('[data-testid="job-subject"]', (els) => els.map((el) => el.textContent))).toEqual(['cust-list-a', 'cust-list-a']);

    // A subject that is not an id is said at the field; the list stays as it was.
    await fill(p, '[data-testid="subject-filter"]', 'not an id');
    await p.click('[data-testid="apply-filter"]');
    await textOnceItContains(p, '.field-error', 'not a subject id');
    expect(await listedJobIds(p)).toEqual([third, first]);
    // A subject without jobs lists none.
    await fill(p, '[data-testid="subject-filter"]', 'cust-list-none');
    await p.click('[data-testid="apply-filter"]');
    await p.waitForSelector('[data-testid="jobs-empty"]');
  }, 120_000);
});
