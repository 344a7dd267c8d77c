import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../examples/agent/agent.js';
import { ConfigError, loadConfig } from '../../src/config.js';
import { seriousViolations } from '../helpers/axe.js';
import { describeInChromium } from '../helpers/chromium.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, authorizeUrl, pkce, startAuthorize } from '../helpers/flow.js';
import { type ListeningServer, startListeningServer } from '../helpers/listening.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const HOST = 'shop.example';

describe(`the sign-in pages (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ REQUIRE_APPROVAL: 'true' });
  });
  afterAll(() => server?.close());

  it('the waiting page names the product, the website and its host, and keeps what agents read', async () => {
    const client = await server.createClient([`https://${HOST}/callback`]);
    const { res, requestId } = await startAuthorize(server, client);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('<title>Waiting for your agent · agent-auth</title>');
    expect(res.body).toMatch(/<h1>Signing in to Shop<\/h1>/);
    expect(res.body).toContain(`<strong id="website-host">${HOST}</strong>`);
    expect(res.body).toContain(`<meta name="request-id" content="${requestId}">`);
    expect(res.body).toMatch(new RegExp(`<script nonce="[^"]+">\\nwindow\\.authRequest = \\{ request_id: "${requestId}"`));
    expect(res.body).toContain('/api/check-status?wait=25&last_status=pending');
    // Without JavaScript the time reads in UTC; the page script turns it into the reader's.
    expect(res.body).toMatch(/<time datetime="[^"]+Z" data-local="time">\d\d:\d\d UTC<\/time>/);
    expect(String(res.headers['content-security-policy'])).toContain("frame-ancestors 'none'");
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('the approval page shows the agent, its model, the email and what is shared in plain words', async () => {
    const client = await server.createClient([`https://${HOST}/callback`]);
    const agent = await server.createAgent('pat@example.com');
    const started = await startAuthorize(server, client, { scope: 'openid email' });
    await agentAuthenticate(server, { request_id: started.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret, model: 'model-x' });
    const res = await server.app.inject({
      url: `/authorize/complete?request_id=${started.requestId}`,
      headers: { cookie: started.cookie! },
    });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('Let your agent sign in to Shop?');
    expect(res.body).toContain(`<strong id="website-host">${HOST}</strong>`);
    expect(res.body).toContain('Test agent');
    expect(res.body).toContain(`<code class="token" id="agent-id">${agent.agent_id}</code>`);
    expect(res.body).toContain('model-x');
    expect(res.body).toContain('<li>Your email address, pat@example.com</li>');
    expect(res.body).not.toMatch(/openid, email/);
  });

  it('the error page says what happened in a sentence, what to do, then the code and a reference', async () => {
    const client = await server.createClient([`https://${HOST}/callback`]);
    const res = await server.app.inject({
      url: authorizeUrl({ client_id: client.client_id, redirect_uri: 'https://evil.example/cb', response_type: 'code', state: 's' }),
      headers: { 'x-request-id': 'support-ref-123' },
    });
    expect(res.statusCode).toBe(400);
    const text = res.body.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');
    const sentence = text.indexOf('The website sent you here with a sign-in link that is not valid.');
    const next = text.indexOf('Go back to the website and start signing in again.');
    const code = text.indexOf('Error code invalid_request');
    const reference = text.indexOf('Reference support-ref-123');
    expect(sentence).toBeGreaterThan(0);
    expect([sentence, next, code, reference]).toEqual([...[sentence, next, code, reference]].sort((a, b) => a - b));
    expect(res.headers['x-request-id']).toBe('support-ref-123');
    expect(res.body).not.toContain('name="request-id"');
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('refuses an accent colour that is not a hex colour, and two logos', () => {
    const base = { DATA_DIR: 'memory', ADMIN_TOKEN: 'x'.repeat(20) };
    for (const colour of ['red', '#12345', 'url(x)', '#1f6feb;}']) {
      expect(() => loadConfig({ ...base, BRAND_ACCENT_COLOR: colour })).toThrow(ConfigError);
      expect(() => loadConfig({ ...base, BRAND_ACCENT_COLOR: colour })).toThrow(/BRAND_ACCENT_COLOR/);
    }
    expect(() => loadConfig({ ...base, BRAND_LOGO_URL: 'javascript:alert(1)' })).toThrow(/BRAND_LOGO_URL/);
    expect(() => loadConfig({ ...base, BRAND_LOGO_URL: 'https://cdn.example/l.png', BRAND_LOGO_FILE: 'l.png' })).toThrow(ConfigError);
  });
});

describe(`branding (${storeName})`, () => {
  let server: TestServer;
  const logo = join(mkdtempSync(join(tmpdir(), 'brand-')), 'logo.svg');
  beforeAll(async () => {
    writeFileSync(logo, '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>');
    server = await startTestServer({ BRAND_NAME: 'Acme ID', BRAND_ACCENT_COLOR: '#FFCC00', BRAND_LOGO_FILE: logo });
  });
  afterAll(() => server?.close());

  it('applies name, logo and accent to the sign-in pages and the console', async () => {
    const client = await server.createClient();
    const { res } = await startAuthorize(server, client);
    expect(res.body).toContain('<title>Waiting for your agent · Acme ID</title>');
    // A light accent gets dark text on it, for contrast.
    expect(res.body).toContain('--accent: #FFCC00; --accent-text: #000000;');
    expect(res.body).toContain('<img src="/assets/logo" alt="">');
    const served = await server.app.inject({ url: '/assets/logo' });
    expect(served.statusCode).toBe(200);
    expect(served.headers['content-type']).toBe('image/svg+xml');
    // Opened on its own, the SVG can run nothing.
    expect(String(served.headers['content-security-policy'])).toContain("default-src 'none'");

    const signIn = await server.admin.inject({ url: '/console/sign-in' });
    expect(signIn.body).toContain('Acme ID console');
    expect(signIn.body).toContain('<img src="/console/assets/logo" alt="">');
    expect((await server.admin.inject({ url: '/console/assets/logo' })).statusCode).toBe(200);
  });
});

describeInChromium('the sign-in pages in a real browser')(`the sign-in pages in a real browser (${storeName})`, { timeout: 120_000 }, () => {
  let browser: Browser;
  let server: ListeningServer;
  beforeAll(async () => {
    browser = await launchChromium();
    server = await startListeningServer({ REQUIRE_APPROVAL: 'true' });
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  async function open(width: number, height: number, options: { javaScriptEnabled?: boolean } = {}) {
    const context = await browser.newContext({ viewport: { width, height }, timezoneId: 'America/New_York', ...options });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    page.on('console', (msg) => msg.type() === 'error' && !/status of 400/.test(msg.text()) && problems.push(msg.text()));
    return { context, page, problems };
  }

  async function toWaiting(page: Page) {
    const client = await server.createClient([`https://${HOST}/callback`]);
    await page.goto(
      server.issuer +
        authorizeUrl({
          client_id: client.client_id,
          redirect_uri: client.redirect_uris[0],
          response_type: 'code',
          state: 's',
          code_challenge: pkce().challenge,
          code_challenge_method: 'S256',
        }),
    );
    return (await page.locator('meta[name="request-id"]').getAttribute('content'))!;
  }

  async function toApproval(page: Page) {
    const requestId = await toWaiting(page);
    const agent = await server.createAgent('pat@example.com');
    const res = await fetch(`${server.issuer}/api/agent/authenticate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret, model: 'model-x' }),
    });
    expect(res.status).toBe(200);
    await page.getByRole('button', { name: 'Approve' }).waitFor({ timeout: 15_000 });
  }

  async function toError(page: Page) {
    await page.goto(`${server.issuer}/authorize?client_id=nobody`);
    await page.locator('#error-code').waitFor();
  }

  const states = { waiting: toWaiting, approval: toApproval, error: toError };

  for (const [name, reach] of Object.entries(states)) {
    it(`${name}: no serious or critical accessibility violation, light and dark, desktop and mobile`, async () => {
      for (const [width, height] of [
        [1200, 900],
        [390, 844],
      ]) {
        const { context, page, problems } = await open(width, height);
        await reach(page);
        for (const colorScheme of ['light', 'dark'] as const) {
          await page.emulateMedia({ colorScheme });
          expect(await seriousViolations(page), `${name} ${width}px ${colorScheme}`).toEqual([]);
        }
        expect(problems).toEqual([]);
        await context.close();
      }
    });
  }

  /** Whether an element's text sits on one line. */
  const oneLine = (page: Page, selector: string) =>
    page
      .locator(selector)
      .evaluate(
        (el) => el.getClientRects().length === 1 && el.getBoundingClientRect().height < 2 * parseFloat(getComputedStyle(el).lineHeight || '20'),
      );

  it('keeps the request id on one line on desktop, stacks labels above values on a phone', async () => {
    const desktop = await open(1200, 900);
    await toWaiting(desktop.page);
    expect(await oneLine(desktop.page, '#request-id')).toBe(true);
    const labelBeside = await desktop.page
      .locator('dl.facts > div')
      .first()
      .evaluate((row) => {
        const [dt, dd] = [row.querySelector('dt')!.getBoundingClientRect(), row.querySelector('dd')!.getBoundingClientRect()];
        return dd.left > dt.right && dd.top === dt.top;
      });
    expect(labelBeside).toBe(true);
    await desktop.context.close();

    const phone = await open(390, 844);
    await toWaiting(phone.page);
    const stacked = await phone.page
      .locator('dl.facts > div')
      .evaluateAll((rows) =>
        rows.every((row) => row.querySelector('dd')!.getBoundingClientRect().top >= row.querySelector('dt')!.getBoundingClientRect().bottom),
      );
    expect(stacked).toBe(true);
    // Nothing wider than the screen.
    expect(await phone.page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await phone.context.close();
  });

  it('shows times in the reader’s time zone, and in UTC without JavaScript', async () => {
    const withScript = await open(1200, 900);
    await toWaiting(withScript.page);
    const time = withScript.page.locator('time[data-local]');
    const iso = (await time.getAttribute('datetime'))!;
    const local = new Date(iso).toLocaleTimeString('en-US', { timeZone: 'America/New_York', hour: '2-digit', minute: '2-digit' });
    await expect.poll(() => time.textContent()).toContain(local.slice(0, 5));
    expect(await time.textContent()).not.toContain('UTC');
    await withScript.context.close();

    const without = await open(1200, 900, { javaScriptEnabled: false });
    await toWaiting(without.page);
    // Its own sign-in's time: the first one's may lie in the minute before.
    const plain = without.page.locator('time[data-local]');
    expect(await plain.textContent()).toBe(`${(await plain.getAttribute('datetime'))!.slice(11, 16)} UTC`);
    await without.context.close();
  });
});
