import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/** Debian's chromium (`.ci/run` installs it); HOOKRELAY_CHROMIUM names another build. */
export const CHROMIUM = process.env.HOOKRELAY_CHROMIUM ?? '/usr/bin/chromium';

export interface TestBrowser {
  browser: Browser;
  /** A fresh context (own sessionStorage) at 1280×800, in the machine's time zone or `timezoneId`. */
  context(options?: { timezoneId?: string }): Promise<BrowserContext>;
  close(): Promise<void>;
}

/**
 * The system's chromium driven by playwright-core: nothing downloaded, a throwaway profile, and no
 * traffic of its own (no updates, sync or QUIC probing), so the page's requests are the only ones.
 */
export async function launchBrowser(): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} does not exist: install Debian's chromium (apt-get install chromium) or set HOOKRELAY_CHROMIUM`);
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    browser,
    context: (options) => browser.newContext({ viewport: { width: 1280, height: 800 }, ...options }),
    // playwright gives the browser a fresh --user-data-dir of its own and removes it on close.
    close: () => browser.close().catch(() => undefined),
  };
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

const axeSource = readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * Runs axe-core in the page (injected as a script: the page's CSP allows only its own scripts, so
 * it is added through the DevTools protocol, which CSP does not govern) and returns the serious
 * and critical violations.
 */
export async function seriousA11yViolations(page: Page): Promise<AxeViolation[]> {
  await page.evaluate(await axeSource);
  const violations = (await page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((result) =>
    result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) })))`)) as AxeViolation[];
  return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
