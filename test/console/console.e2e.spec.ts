import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'puppeteer-core';
import type { OpsOverview } from '@gm/contracts';
import { eventually, memory, startTestRuntime, type ApiBody, type EmbeddedTestRuntime } from '../e2e/harness.ts';
import { buildConsole, fill, inPage, launchBrowser, screenshot, signIn, textOnceItContains } from './browser.ts';

/**
 * The review and compliance console (apps/console, docs/console.md) in Debian's Chromium, against the
 * embedded runtime: what a reviewer, a compliance officer and an SRE do there, and that the
 * console shows only what the server allows.
 */
describe('the console in a browser', () => {
  let rt: EmbeddedTestRuntime;
  let browser: Browser;
  let page: Page;
  let consoleDir: string;
  let writer: string;

  beforeAll(async () => {
    consoleDir = await buildConsole();
    rt = await startTestRuntime({ MEMORY_CONSOLE_DIR: consoleDir });
    browser = await launchBrowser();
    writer = await rt.issue({ agentId: 'support-bot', principal: { id: 'alice', kind: 'person' }, actions: ['write', 'read', 'search', 'request_delete'] });
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await rt?.close();
    rmSync(consoleDir, { recursive: true, force: true });
  });

  /** A fresh page each test: nothing carries over but what the server holds. */
  const open = async (token: string): Promise<Page> => {
    await page?.close();
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    await signIn(page, rt.url, token);
    return page;
  };
  const queueRow = (id: string) => `[data-testid="queue-row"][data-record-id="${id}"]`;
  /** What an agent's keyword search finds (lexical: exact words, so one record's promotion is all that changes the answer). */
  const search = async (token: string, query: string) =>
    (await rt.api('POST', '/v1/search', { token, body: { query, mode: 'lexical' } })).body.items.map((i) => i.recordId);

  it('loads without asking for anything the server does not have (its icon is in the page)', async () => {
    const missing: string[] = [];
    const fresh = await browser.newPage();
    try {
      fresh.on('response', (response) => {
        if (response.status() === 404) missing.push(response.url());
      });
      await signIn(fresh, rt.url, writer);
      await fresh.reload({ waitUntil: 'networkidle0' });
      expect(missing).toEqual([]);
      expect(await fresh.$eval('link[rel="icon"]', (el) => el.getAttribute('href'))).toMatch(/^data:image\/svg\+xml,/);
    } finally {
      await fresh.close();
    }
  });

  it('lets a reviewer promote a quarantined write, which an agent then finds', async () => {
    const written = await rt.api('POST', '/v1/memories', {
      token: writer, body: memory({ id: 'cq-1', subjectId: 'cust-cq', trust: 'untrusted', content: 'Capybara account wants invoices in euros' }),
    });
    expect(written.status).toBe(201);
    expect(await search(writer, 'capybara invoices')).toEqual([]);
    const reviewer = await rt.issue({ agentId: 'review-desk', principal: { id: 'carol', kind: 'person' }, actions: ['review', 'promote', 'read'] });
    const p = await open(reviewer);
    await p.click('[data-testid="nav-review"]');
    await p.waitForSelector(queueRow('cq-1'));
    const rowText = await p.$eval(queueRow('cq-1'), (el) => el.textContent ?? '');
    // Provenance, trust and who wrote it, beside the content.
    for (const shown of ['Capybara account wants invoices in euros', 'untrusted', 'support-bot']) expect(rowText).toContain(shown);
    await screenshot(p, 'review-queue');
    await p.click(`${queueRow('cq-1')} [data-testid="promote"]`);
    await textOnceItContains(p, '[data-testid="review-status"]', 'cq-1');
    await p.waitForSelector(queueRow('cq-1'), { hidden: true });
    expect(await search(writer, 'capybara invoices')).toEqual(['cq-1']);
  });

  it('shows the refusal when the writer agent tries to promote its own write', async () => {
    await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'cq-self', subjectId: 'cust-cq', trust: 'untrusted', content: 'Self-promoted claim about refunds' }) });
    const self = await rt.issue({ agentId: 'support-bot', principal: { id: 'dave', kind: 'person' }, actions: ['review', 'promote'] });
    const p = await open(self);
    await p.click('[data-testid="nav-review"]');
    await p.waitForSelector(queueRow('cq-self'));
    await p.click(`${queueRow('cq-self')} [data-testid="promote"]`);
    const alert = await textOnceItContains(p, '[data-testid="problem"]', 'MEM_SELF_PROMOTION');
    expect(alert).toMatch(/another reviewer/i);
    // Still in the queue: nothing changed.
    const queue = await rt.api<{ items: Array<{ id: string; version: number }> }>('GET', '/v1/review/quarantine', { token: self });
    expect(queue.body.items.find((r) => r.id === 'cq-self')?.version).toBe(1);
  });

  it('shows the newer version when a record changed since the queue was read', async () => {
    await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'cq-race', subjectId: 'cust-cq', trust: 'untrusted', content: 'Racing note about delivery windows' }) });
    const reviewer = await rt.issue({ agentId: 'review-desk', principal: { id: 'carol', kind: 'person' }, actions: ['review', 'promote', 'read'] });
    const other = await rt.issue({ agentId: 'review-bot', principal: { id: 'erin', kind: 'person' }, actions: ['review'] });
    const p = await open(reviewer);
    await p.click('[data-testid="nav-review"]');
    await p.waitForSelector(queueRow('cq-race'));
    // The writer corrects it meanwhile (still untrusted, so still quarantined): the page's version 1 is stale.
    const corrected = await rt.api('POST', '/v1/memories', {
      token: writer, body: memory({ id: 'cq-race', subjectId: 'cust-cq', trust: 'untrusted', content: 'Corrected note about delivery windows', expectedVersion: 1 }),
    });
    expect(corrected.body).toMatchObject({ version: 2, status: 'quarantined' });
    await p.click(`${queueRow('cq-race')} [data-testid="promote"]`);
    const conflict = await textOnceItContains(p, '[data-testid="conflict"]', 'Corrected note about delivery windows');
    expect(await p.$eval('[data-testid="conflict"]', (el) => el.getAttribute('data-current-version'))).toBe('2');
    expect(await p.$eval('[data-testid="problem"]', (el) => el.textContent ?? '')).toContain('MEM_CONFLICT');
    expect(conflict).toContain('2');
    await screenshot(p, 'review-conflict');
    const queue = await rt.api<{ items: Array<{ id: string; version: number }> }>('GET', '/v1/review/quarantine', { token: other });
    expect(queue.body.items.find((r) => r.id === 'cq-race')?.version).toBe(2);
  });

  it('shows no queue to a capability without review rights', async () => {
    const agent = await rt.issue({ agentId: 'support-bot', principal: { id: 'alice', kind: 'person' }, actions: ['search', 'read'] });
    const p = await open(agent);
    expect(await p.$('[data-testid="nav-review"]')).toBeNull();
    // Even asked for directly, the server refuses and the page says so.
    await p.goto(`${rt.url}/console/#/review`);
    await signIn(p, rt.url, agent);
    await inPage(p, "window.location.hash = '#/review'");
    await textOnceItContains(p, '[data-testid="problem"]', 'CAP_ACTION_DENIED');
    expect(await p.$$('[data-testid="queue-row"]')).toHaveLength(0);
    await screenshot(p, 'review-refused');
  });

  it('follows a forget to verified, verifies its receipt in the page and shows a tampered one invalid', async () => {
    await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'cf-1', subjectId: 'cust-cf', content: 'Coati clinic notes a latex allergy' }) });
    const forget = await rt.api('POST', '/v1/subjects/cust-cf/forget', { token: writer, body: {} });
    expect(forget.status).toBe(202);
    const jobId = String(forget.body.jobId);
    await eventually('the forget verified with its receipt', async () => {
      const receipt = await rt.api('GET', `/v1/deletion-jobs/${jobId}/receipt`, { token: writer });
      return receipt.status === 200;
    }, 60_000);
    const officer = await rt.issue({ agentId: 'compliance-desk', principal: { id: 'frank', kind: 'person' }, scopes: [{ kind: 'project', id: 'maple' }, { kind: 'tenant', id: 'acme' }], actions: ['admin', 'request_delete'] });
    const p = await open(officer);
    await p.click('[data-testid="nav-jobs"]');
    const jobRow = `[data-testid="job-row"][data-job-id="${jobId}"]`;
    await p.waitForSelector(jobRow);
    await p.click(`${jobRow} a`);
    await textOnceItContains(p, '[data-testid="job-status"]', 'verified');
    const verdict = await textOnceItContains(p, '[data-testid="receipt-verdict"]', 'valid');
    expect(verdict).not.toContain('invalid');
    // Per-target evidence is listed.
    const page = await p.$eval('main', (el) => el.textContent ?? '');
    for (const target of ['primary', 'keyword', 'key', 'verification']) expect(page).toContain(target);

    // The download is the compact JWS itself, saved as <jobId>.jws.
    const downloads = mkdtempSync(path.join(os.tmpdir(), 'gm-downloads-'));
    const cdp = await p.createCDPSession();
    await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloads });
    await p.click('[data-testid="download-jws"]');
    const file = path.join(downloads, `${jobId}.jws`);
    const downloaded = await eventually('the receipt downloaded', async () => existsSync(file) && readFileSync(file, 'utf8'));
    const stored = await rt.api('GET', `/v1/deletion-jobs/${jobId}/receipt`, { token: officer });
    const jws = String((stored.body as ApiBody & { receipt: string }).receipt);
    expect(downloaded).toBe(jws);
    rmSync(downloads, { recursive: true, force: true });

    // One changed claim (the job says "failed"), the signature kept: invalid.
    const [header, payload = '', signature] = jws.split('.');
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
    const tampered = `${header}.${Buffer.from(JSON.stringify({ ...claims, status: 'failed' })).toString('base64url')}.${signature}`;
    for (const [jwsText, expected] of [[jws, 'valid'], [tampered, 'invalid']] as const) {
      await fill(p, '[data-testid="pasted-receipt"]', jwsText);
      await p.click('[data-testid="verify-pasted"]');
      const pasted = await textOnceItContains(p, '[data-testid="pasted-verdict"]', expected);
      if (expected === 'valid') expect(pasted).not.toContain('invalid');
    }
    await screenshot(p, 'receipt-tampered');
  }, 120_000);

  it('shows a legal hold keeping content, and the job that purges it once the hold is released', async () => {
    const officer = await rt.issue({ agentId: 'compliance-desk', principal: { id: 'frank', kind: 'person' }, scopes: [{ kind: 'project', id: 'maple' }, { kind: 'tenant', id: 'acme' }], actions: ['admin', 'request_delete'] });
    await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'ch-1', subjectId: 'cust-ch', content: 'Held note about the Tapir contract' }) });
    expect((await rt.api('POST', '/v1/legal-holds', { token: officer, body: { holdId: 'hold-ch', subjectId: 'cust-ch', reason: 'litigation 2026-17' } })).status).toBe(201);
    const forget = await rt.api('POST', '/v1/subjects/cust-ch/forget', { token: writer, body: {} });
    const jobId = String(forget.body.jobId);
    await eventually('the held forget verified', async () => (await rt.api('GET', `/v1/deletion-jobs/${jobId}/receipt`, { token: officer })).status === 200, 60_000);

    const p = await open(officer);
    await p.goto(`${rt.url}/console/#/jobs/${jobId}`);
    await textOnceItContains(p, '[data-testid="job-status"]', 'verified');
    expect(await p.$eval('[data-testid="hold-id"]', (el) => el.textContent)).toBe('hold-ch');
    // The job's parts render as their requests answer: waited for, not read at once.
    await p.waitForSelector('[data-testid="retention"][data-retained="true"]');
    expect(await textOnceItContains(p, '[data-testid="receipt-verdict"]', 'valid')).not.toContain('invalid');
    await screenshot(p, 'deletion-job-held');

    // Released through the API: the page links the continuation, whose receipt says purged.
    expect((await rt.api('DELETE', '/v1/legal-holds/hold-ch', { token: officer })).status).toBe(202);
    const continuedBy = await eventually('the continuation job', async () => {
      const job = await rt.api('GET', `/v1/deletion-jobs/${jobId}`, { token: officer });
      return typeof job.body.continuedBy === 'string' ? job.body.continuedBy : undefined;
    }, 30_000);
    await eventually('the purge verified', async () => (await rt.api('GET', `/v1/deletion-jobs/${continuedBy}/receipt`, { token: officer })).status === 200, 60_000);
    await p.reload();
    await signIn(p, rt.url, officer);
    await inPage(p, `window.location.hash = ${JSON.stringify(`#/jobs/${jobId}`)}`);
    await p.waitForSelector('[data-testid="job-continued-by"]');
    await p.click('[data-testid="job-continued-by"]');
    await textOnceItContains(p, '[data-testid="job-continues"]', jobId);
    await p.waitForSelector('[data-testid="retention"][data-retained="false"]');
    expect(await textOnceItContains(p, '[data-testid="receipt-verdict"]', 'valid')).not.toContain('invalid');
  }, 120_000);

  it('pages through the jobs list and filters it by status', async () => {
    const officer = await rt.issue({ agentId: 'compliance-desk', principal: { id: 'frank', kind: 'person' }, scopes: [{ kind: 'project', id: 'maple' }, { kind: 'tenant', id: 'acme' }], actions: ['admin', 'request_delete'] });
    const jobIds: string[] = [];
    for (let n = 0; n < 11; n += 1) jobIds.push(String((await rt.api('POST', `/v1/subjects/cust-page-${n}/forget`, { token: writer, body: {} })).body.jobId));
    await eventually('every job verified', async () => {
      const listed = await rt.api<{ items: Array<{ jobId: string; status: string }> }>('GET', '/v1/deletion-jobs?status=verified&limit=100', { token: officer });
      return jobIds.every((id) => listed.body.items.some((j) => j.jobId === id));
    }, 60_000);
    const p = await open(officer);
    await p.click('[data-testid="nav-jobs"]');
    await p.waitForSelector('[data-testid="job-row"]');
    await p.select('[data-testid="status-filter"]', 'verified');
    // A select applies at once (Apply is for the time field).
    await p.select('[data-testid="limit-filter"]', '10');
    await p.waitForSelector('[data-testid="jobs-more"]');
    expect(await p.$$eval('[data-testid="job-row"]', (rows) => rows.length)).toBe(10);
    const total = (await rt.api<{ items: unknown[] }>('GET', '/v1/deletion-jobs?status=verified&limit=100', { token: officer })).body.items.length;
    await p.click('[data-testid="jobs-more"]');
    await p.waitForFunction(`document.querySelectorAll('[data-testid="job-row"]').length === ${Math.min(total, 20)}`);
    const statuses = await p.$$eval('[data-testid="job-row"] [data-testid="job-status"]', (els) => els.map((el) => el.textContent));
    expect(new Set(statuses)).toEqual(new Set(['verified']));
  }, 120_000);

  it('draws consumer lag and throughput for an administrator', async () => {
    const sre = await rt.issue({ agentId: 'sre-desk', principal: { id: 'sam', kind: 'person' }, scopes: [{ kind: 'tenant', id: 'acme' }], actions: ['admin'] });
    const p = await open(sre);
    await p.click('[data-testid="nav-ops"]');
    const points = (at: number) => `Number(document.querySelector('[data-testid="ops-chart"]')?.getAttribute('data-points') ?? 0) >= ${at}`;
    await p.waitForFunction(points(1), { timeout: 30_000 });
    // Writes while the page watches: the next readings count them (the page polls every 2 s).
    const batch = Array.from({ length: 20 }, (_, n) => memory({ id: `co-${n}`, subjectId: 'cust-co', content: `Ocelot note ${n}` }));
    expect((await rt.api('POST', '/v1/memories:batch', { token: writer, body: { items: batch } })).status).toBe(200);
    await p.waitForFunction(points(3), { timeout: 30_000 });
    const overview = await rt.api<OpsOverview>('GET', '/v1/ops/overview', { token: sre });
    expect(overview.body.history.some((h) => h.writesPerSecond > 0)).toBe(true);
    expect(await p.$('[data-testid="ops-chart"] canvas')).not.toBeNull();
    const text = await p.$eval('main', (el) => el.textContent ?? '');
    for (const group of ['write-admission', 'projector', 'index-builder']) expect(text).toContain(group);
    await screenshot(p, 'operations');
  });

  it('works from the keyboard alone, and names every control for a screen reader', async () => {
    await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'cq-kb', subjectId: 'cust-cq', trust: 'untrusted', content: 'Kinkajou account prefers paper invoices' }) });
    const reviewer = await rt.issue({ agentId: 'review-desk', principal: { id: 'carol', kind: 'person' }, actions: ['review', 'promote', 'read'] });
    await page?.close();
    page = await browser.newPage();
    const p = page;
    await p.goto(`${rt.url}/console/`);
    await p.waitForSelector('[data-testid="capability-input"]');
    /** Tabs forward until the focused element matches, as a keyboard user would (bounded: a trap fails the test). */
    const tabTo = async (selector: string) => {
      for (let presses = 0; presses < 60; presses += 1) {
        await p.keyboard.press('Tab');
        if (await inPage<boolean>(p, `document.activeElement?.matches(${JSON.stringify(selector)}) ?? false`)) return;
      }
      throw new Error(`Tab never reached ${selector}`);
    };
    await tabTo('[data-testid="capability-input"]');
    await p.keyboard.type(reviewer);
    await tabTo('[data-testid="sign-in"]');
    await p.keyboard.press('Enter');
    await tabTo('[data-testid="nav-review"]');
    await p.keyboard.press('Enter');
    await p.waitForSelector(queueRow('cq-kb'));
    await tabTo(`${queueRow('cq-kb')} [data-testid="promote"]`);
    await p.keyboard.press('Enter');
    await textOnceItContains(p, '[data-testid="review-status"]', 'cq-kb');
    expect(await search(writer, 'kinkajou')).toEqual(['cq-kb']);

    // Every button, link, field and select has a name (the accessibility tree Chromium builds).
    await p.click('[data-testid="nav-jobs"]');
    await p.waitForSelector('[data-testid="status-filter"]');
    type AxNode = { role: string; name?: string; children?: AxNode[] };
    const unnamed: string[] = [];
    const walk = (node: AxNode | null | undefined) => {
      if (!node) return;
      if (['button', 'link', 'textbox', 'combobox', 'checkbox', 'radio'].includes(node.role) && !(node.name ?? '').trim()) unnamed.push(node.role);
      node.children?.forEach(walk);
    };
    walk((await p.accessibility.snapshot()) as AxNode | null);
    expect(unnamed).toEqual([]);
  });

  it('keeps the capability and every content out of the URL and the browser\'s storage', async () => {
    const reviewer = await rt.issue({ agentId: 'review-desk', principal: { id: 'carol', kind: 'person' }, actions: ['review', 'promote', 'read'] });
    await rt.api('POST', '/v1/memories', { token: writer, body: memory({ id: 'cq-priv', subjectId: 'cust-cq', trust: 'untrusted', content: 'Pangolin secret pricing' }) });
    const p = await open(reviewer);
    await p.click('[data-testid="nav-review"]');
    await p.waitForSelector(queueRow('cq-priv'));
    const stored = await inPage<Record<string, string>>(p,
      '({ url: window.location.href, local: JSON.stringify({ ...localStorage }), session: JSON.stringify({ ...sessionStorage }), cookies: document.cookie })');
    for (const value of Object.values(stored)) {
      expect(value).not.toContain(reviewer.slice(-20));
      expect(value).not.toContain('Pangolin');
    }
    // A reload forgets the capability: back to sign-in.
    await p.reload();
    await p.waitForSelector('[data-testid="capability-input"]');
    expect(readFileSync(`${consoleDir}/index.html`, 'utf8')).not.toContain('<script>');
  });
});
