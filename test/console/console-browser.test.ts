import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchChromium } from '../../examples/agent/agent.js';
import { seriousViolations } from '../helpers/axe.js';
import { describeInChromium } from '../helpers/chromium.js';
import { exchangeCode } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { signInToCode } from '../helpers/flow.js';
import { freePort } from '../helpers/listening.js';
import { ADMIN_TOKEN, startTestServer, type TestServer } from '../helpers/server.js';

describeInChromium('the console in a real browser')(`the console in a real browser (${storeName})`, { timeout: 120_000 }, () => {
  let browser: Browser;
  let server: TestServer;
  let consoleUrl: string;
  let context: BrowserContext;
  let page: Page;
  const problems: string[] = [];

  beforeAll(async () => {
    browser = await launchChromium();
    server = await startTestServer();
    const port = await freePort();
    await server.admin.listen({ port, host: '127.0.0.1' });
    consoleUrl = `http://127.0.0.1:${port}/console`;
    context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: `http://127.0.0.1:${port}` });
    // Anything that goes wrong on a page is recorded: console errors, exceptions, CSP violations.
    await context.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI}`));
    });
    page = await context.newPage();
    page.on('console', (msg) => {
      // The sign-in refusal is a 401 page, which the browser reports; it is expected.
      if (msg.type() === 'error' && !/status of 401/.test(msg.text())) problems.push(`${msg.location().url}: ${msg.text()}`);
    });
    page.on('pageerror', (err) => problems.push(`uncaught: ${err.message}`));
  });
  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await server?.close();
  });

  /** No serious or critical axe violation, in light and in dark mode. */
  async function accessible() {
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme });
      expect(await seriousViolations(page), `${page.url()} (${colorScheme})`).toEqual([]);
    }
    await page.emulateMedia({ colorScheme: 'light' });
  }

  /** The secret on the page just after creating or rotating; the copy button copies exactly it. */
  async function secretShownOnce(): Promise<string> {
    const secret = (await page.locator('#new-secret').textContent())!.trim();
    await page.getByRole('button', { name: 'Copy' }).click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await page.reload();
    await expect(page.locator('#new-secret').count()).resolves.toBe(0);
    expect(await page.content()).not.toContain(secret);
    return secret;
  }

  it('signs in with the admin token, refusing a wrong one', async () => {
    await page.goto(consoleUrl);
    expect(page.url()).toBe(`${consoleUrl}/sign-in`);
    await accessible();
    await page.getByLabel('Admin token').fill('not-the-token');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('That is not the admin token.');
    expect((await context.cookies()).find((c) => c.name === 'agent_auth_console')).toBeUndefined();

    await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Overview' }).waitFor();
    expect(page.url()).toBe(consoleUrl);
    const session = (await context.cookies()).find((c) => c.name === 'agent_auth_console')!;
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console' });
    await accessible();
  });

  let website: { client_id: string; client_secret: string; redirect_uris: string[] };
  let agent: { agent_id: string; agent_secret: string; email: string };

  it('registers a website and shows its secret once, with a copy button', async () => {
    await page.getByRole('link', { name: 'Websites', exact: true }).click();
    await page.getByLabel('Name').fill('Browser shop');
    await page.getByLabel('Redirect URIs').fill('https://shop.example/callback');
    await page.getByRole('button', { name: 'Register website' }).click();
    await page.getByRole('heading', { name: /Browser shop/ }).waitFor();
    await accessible();
    const clientId = (await page.locator('#client-id').textContent())!;
    website = { client_id: clientId, client_secret: await secretShownOnce(), redirect_uris: ['https://shop.example/callback'] };
  });

  it('registers an agent and shows its secret once', async () => {
    await page.getByRole('link', { name: 'Agents', exact: true }).click();
    await accessible();
    await page.getByLabel("User's email").fill('browser-owner@example.com');
    await page.getByLabel('Agent name (optional)').fill('Research bot');
    await page.getByRole('button', { name: 'Register agent' }).click();
    await page.getByRole('heading', { name: /Research bot/ }).waitFor();
    const agentId = (await page.locator('#agent-id').textContent())!;
    agent = { agent_id: agentId, agent_secret: await secretShownOnce(), email: 'browser-owner@example.com' };
  });

  it('shows a real sign-in with those secrets as a grant, and revokes it', async () => {
    const { code, verifier } = await signInToCode(server, { client: website, agent, model: 'claude-console-test' });
    expect((await exchangeCode(server, website, code, verifier)).statusCode).toBe(200);

    await page.goto(`${consoleUrl}/websites/${website.client_id}`);
    await expect(page.locator('#signed-in-agents').textContent()).resolves.toContain('claude-console-test');
    await page.goto(`${consoleUrl}/agents/${agent.agent_id}`);
    // The checkbox sits right before its words, on one line; "Add key" and "Make key-only" do not touch.
    const box = (await page.getByLabel('Also sign this agent out of every website now').boundingBox())!;
    const words = (await page.locator('label.check').boundingBox())!;
    expect(words.x).toBeCloseTo(box.x, -1);
    expect(words.height).toBeLessThan(40);
    const add = (await page.getByRole('button', { name: 'Add key' }).boundingBox())!;
    const keyOnly = (await page.getByRole('button', { name: /Make key-only/ }).boundingBox())!;
    expect(keyOnly.y - (add.y + add.height)).toBeGreaterThanOrEqual(8);
    const row = page.locator('#grants-table tbody tr');
    await expect(row.locator('.grant-status').textContent()).resolves.toBe('Active');
    await accessible();
    await row.getByText('Show the sign-in').click();
    await row.getByRole('button', { name: 'Revoke the grant at Browser shop' }).click();
    await page.getByText('Grant revoked').waitFor();
    await expect(page.locator('#grants-table tbody tr .grant-status').textContent()).resolves.toBe('Revoked');
    const [grant] = (await server.adminCall('GET', `/admin/agents/${agent.agent_id}/grants`)).json.grants;
    expect(grant).toMatchObject({ active: false, revoked_reason: 'admin_grant' });
  });

  it('finds them on the home page, the user page and in the audit log', async () => {
    await page.goto(consoleUrl);
    await page.getByLabel('Search').fill('research');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect(page.locator('#agents-table tbody tr').count()).resolves.toBe(1);
    await expect(page.locator('#websites-table').count()).resolves.toBe(0);

    await page.getByRole('link', { name: 'browser-owner@example.com' }).click();
    await page.getByRole('heading', { name: 'Agents of browser-owner@example.com' }).waitFor();
    await accessible();

    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.getByLabel('Agent id').fill(agent.agent_id);
    await page.getByLabel('Event', { exact: true }).selectOption('revoked');
    await page.getByRole('button', { name: 'Filter' }).click();
    await expect(page.locator('#audit-table tbody tr').count()).resolves.toBe(1);
    await accessible();
  });

  it('shows the whole audit log at 1280 px, websites by name: no column cut off, nothing to scroll sideways', async () => {
    // The longest values a row can hold side by side: a long website name, email and model.
    const long = (
      await server.adminCall('POST', '/admin/clients', {
        name: 'The Very Long Named Example Web Shop',
        redirect_uris: ['https://a-rather-long-shop-name.example/cb'],
      })
    ).json;
    const longAgent = await server.createAgent('someone.with.a.long.address@subdomain.example.com');
    const { code, verifier } = await signInToCode(server, { client: long, agent: longAgent, model: 'a-model-with-a-long-name-2026-11-25' });
    expect((await exchangeCode(server, long, code, verifier)).statusCode).toBe(200);
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.goto(`${consoleUrl}/audit`);
    const wrap = page.locator('.table-wrap');
    const { scrollWidth, clientWidth } = await wrap.evaluate((el) => ({ scrollWidth: el.scrollWidth, clientWidth: el.clientWidth }));
    expect(scrollWidth).toBeLessThanOrEqual(clientWidth);
    const website = page.locator('#audit-table tbody tr td[data-label="Website"]').first();
    await expect(website.textContent()).resolves.toBe('The Very Long Named Example Web Shopa-rather-long-shop-name.example');
    // The cell lies wholly inside the visible table.
    const [cell, visible] = await Promise.all([website.boundingBox(), wrap.boundingBox()]);
    expect(cell!.x + cell!.width).toBeLessThanOrEqual(visible!.x + visible!.width + 0.5);
    await accessible();
    // The Users page lists the users, and passes axe too.
    await page.goto(`${consoleUrl}/users`);
    await expect(page.locator('#users-table tbody tr').count()).resolves.toBe(2);
    await accessible();
    await page.setViewportSize({ width: 1200, height: 900 });
  });

  it('signs out; the console then asks to sign in again', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Admin token').waitFor();
    await page.goto(consoleUrl);
    expect(page.url()).toBe(`${consoleUrl}/sign-in`);
    expect(problems).toEqual([]);
  });
});
