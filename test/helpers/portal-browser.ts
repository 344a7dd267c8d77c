import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import { launchChromium } from '../../examples/agent/agent.js';
import { startPortalServer } from './owner.js';
import type { TestServer } from './server.js';
import { linkIn, startSmtp, type TestSmtp } from './smtp.js';

export interface PortalInChromium {
  browser: Browser;
  smtp: TestSmtp;
  server: TestServer;
  /** http://localhost:<port>, so that the browser sends the Origin the owner API expects. */
  issuer: string;
  context: BrowserContext;
  page: Page;
  /** Console errors, CSP violations and uncaught exceptions of the page: a test ends expecting none. */
  problems: string[];
}

/**
 * For a describe block: Chromium on one page of a portal server that mails through a real SMTP server,
 * started before its tests and closed after. The clipboard is allowed; `options` adds to the context's.
 */
export function portalInChromium(options: BrowserContextOptions = {}): PortalInChromium {
  const portal = { problems: [] as string[] } as PortalInChromium;
  beforeAll(async () => {
    portal.browser = await launchChromium();
    portal.smtp = await startSmtp();
    ({ server: portal.server, issuer: portal.issuer } = await startPortalServer(portal.smtp));
    portal.context = await portal.browser.newContext({ viewport: { width: 1280, height: 800 }, ...options });
    await portal.context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: portal.issuer });
    await portal.context.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI}`));
    });
    portal.page = await portal.context.newPage();
    portal.page.on('console', (msg) => {
      if (msg.type() === 'error') portal.problems.push(`${msg.location().url}: ${msg.text()}`);
    });
    portal.page.on('pageerror', (err) => portal.problems.push(`uncaught: ${err.message}`));
  });
  afterAll(async () => {
    await portal.context?.close();
    await portal.browser?.close();
    await portal.server?.close();
    await portal.smtp?.close();
  });
  return portal;
}

/** What an owner does on the sign-in form: asks for a link, opens it from the mail, presses "Sign in". */
export async function signInByEmailLink(portal: PortalInChromium, email: string): Promise<void> {
  const { page, smtp, issuer } = portal;
  await page.getByLabel('Your email address').fill(email);
  await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
  await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
  await page.goto(linkIn(await smtp.next(email, 5000, (mail) => mail.subject.includes('sign-in link'))));
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${issuer}/account`);
}
