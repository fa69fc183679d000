import { existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { build } from 'vite';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CONSOLE_ROOT = path.join(ROOT, 'apps/console');

/** Where the tests leave one screenshot per page (the note shows them). */
export const SCREENSHOTS = path.join(ROOT, 'test-results/console');

/** Debian's Chromium (scripts/setup.sh installs it); CHROMIUM_PATH names another. No browser is downloaded. */
export function chromiumPath(): string {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter((p): p is string => p !== undefined);
  const found = candidates.find((p) => existsSync(p));
  if (found === undefined) {
    throw new Error(`no Chromium at ${candidates.join(', ')}: install Debian's (apt-get install chromium, as scripts/setup.sh does as root) or set CHROMIUM_PATH`);
  }
  return found;
}

/** The console built from its sources into a fresh directory: the tests see this tree's console, not an old dist. */
export async function buildConsole(): Promise<string> {
  const outDir = mkdtempSync(path.join(os.tmpdir(), 'gm-console-'));
  await build({ root: CONSOLE_ROOT, configFile: path.join(CONSOLE_ROOT, 'vite.config.ts'), build: { outDir, emptyOutDir: true }, logLevel: 'warn' });
  return outDir;
}

export async function launchBrowser(): Promise<Browser> {
  // Root in CI: Chromium's sandbox needs an unprivileged user, which a CI container does not have.
  return puppeteer.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Opens the console and signs in with this capability (pasted, as a person would). */
export async function signIn(page: Page, baseUrl: string, token: string): Promise<void> {
  await page.goto(`${baseUrl}/console/`);
  await page.waitForSelector('[data-testid="capability-input"]');
  await page.locator('[data-testid="capability-input"]').fill(token);
  await page.click('[data-testid="sign-in"]');
  await page.waitForSelector('nav');
}

/**
 * Page-side code is passed as text: this program has Node's types, not the DOM's (the console
 * itself is typechecked against the DOM, apps/console/tsconfig.json).
 */
export async function inPage<T>(page: Page, expression: string): Promise<T> {
  return page.evaluate(expression) as Promise<T>;
}

/** The text of the first element matching `selector` that contains `expected`, once there is one. */
export async function textOnceItContains(page: Page, selector: string, expected: string, timeout = 30_000): Promise<string> {
  const find = `[...document.querySelectorAll(${JSON.stringify(selector)})].map((el) => el.textContent ?? '').find((t) => t.includes(${JSON.stringify(expected)}))`;
  await page.waitForFunction(`${find} !== undefined`, { timeout });
  return inPage<string>(page, find);
}

/** Fills a text field as typing would (the framework sees an input event). */
export async function fill(page: Page, selector: string, value: string): Promise<void> {
  await page.locator(selector).fill(value);
}
