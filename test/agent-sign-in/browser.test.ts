import { randomBytes } from 'node:crypto';
import Fastify from 'fastify';
import type { Browser, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchChromium } from '../../examples/agent/agent.js';
import { describeInChromium, hasChromium } from '../helpers/chromium.js';
import { storeName } from '../helpers/database.js';
import { pkce } from '../helpers/flow.js';
import { freePort, type ListeningServer, startListeningServer } from '../helpers/listening.js';

const describe = describeInChromium('sign-ins in a real browser');
let browser: Browser;

beforeAll(async () => {
  if (hasChromium) browser = await launchChromium();
});
afterAll(() => browser?.close());

const escapeHtml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** The relying website: a sign-in link to our /authorize (PKCE, state) and a callback that shows its query. */
async function startWebsite(server: ListeningServer) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const client = await server.createClient([`${url}/callback`]);
  const site = Fastify();
  site.get('/', async (_request, reply) => {
    const query = new URLSearchParams({
      client_id: client.client_id,
      redirect_uri: `${url}/callback`,
      response_type: 'code',
      scope: 'openid email',
      state: randomBytes(16).toString('base64url'),
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
    });
    const href = escapeHtml(`${server.issuer}/authorize?${query}`);
    return reply.type('text/html').send(`<!doctype html><title>Shop</title><h1>Shop</h1><a id="sign-in" href="${href}">Sign in with agent</a>`);
  });
  site.get('/callback', async (request, reply) => {
    const json = escapeHtml(JSON.stringify(request.query));
    return reply.type('text/html').send(`<!doctype html><title>Shop callback</title><h1>Callback</h1><pre id="query">${json}</pre>`);
  });
  site.get('/favicon.ico', async (_request, reply) => reply.code(204).send());
  await site.listen({ port, host: '127.0.0.1' });
  return { url, client, close: () => site.close() };
}
type Website = Awaited<ReturnType<typeof startWebsite>>;

/**
 * A fresh browser profile with everything that goes wrong on a page recorded: console errors,
 * uncaught exceptions and Content-Security-Policy violations.
 */
async function openBrowser(options: BrowserContextOptions = {}) {
  const context = await browser.newContext({ viewport: { width: 880, height: 620 }, ...options });
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI}`);
    });
  });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error') problems.push(`${msg.location().url}: ${msg.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`uncaught: ${err.message}`));
  return { context, page, problems };
}

/** From the website's button to our page; returns the state the website sent. */
async function clickSignIn(page: Page, site: Website, server: ListeningServer) {
  await page.goto(site.url);
  const href = (await page.locator('#sign-in').getAttribute('href'))!;
  await page.getByText('Sign in with agent').click();
  await page.waitForURL(`${server.issuer}/authorize?**`);
  return new URL(href).searchParams.get('state')!;
}

async function agentAuthenticates(server: ListeningServer, requestId: string) {
  const agent = await server.createAgent('owner@example.com');
  const res = await fetch(`${server.issuer}/api/agent/authenticate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret, model: 'claude-browser-test' }),
  });
  expect(res.status).toBe(200);
  return agent;
}

async function callbackQuery(page: Page, site: Website): Promise<Record<string, string>> {
  await page.waitForURL(`${site.url}/callback?**`, { timeout: 15_000 });
  return JSON.parse((await page.locator('#query').textContent())!);
}

describe(`a real browser signs in (${storeName})`, { timeout: 60_000 }, () => {
  let server: ListeningServer;
  let site: Website;
  beforeAll(async () => {
    server = await startListeningServer();
    site = await startWebsite(server);
  });
  afterAll(async () => {
    await site?.close();
    await server?.close();
  });

  it('goes from the website to our page and back to the callback with code, state and iss, without a console error', async () => {
    const { context, page, problems } = await openBrowser();
    const state = await clickSignIn(page, site, server);

    // The agent finds the request id in the DOM, twice.
    const requestId = await page.locator('meta[name="request-id"]').getAttribute('content');
    expect(requestId).toMatch(/^req_/);
    expect(await page.evaluate(() => (window as unknown as { authRequest: { request_id: string } }).authRequest.request_id)).toBe(requestId);
    expect(await page.locator('#request-id').textContent()).toBe(requestId);
    await expect.poll(() => page.locator('#status').textContent()).toContain('Waiting for your agent');

    // Back channel: the page moves on by itself once the agent has authenticated.
    const agent = await agentAuthenticates(server, requestId!);
    const query = await callbackQuery(page, site);
    expect(query.code).toMatch(/^aa_code_/);
    expect(query.state).toBe(state);
    expect(query.iss).toBe(server.issuer);

    const status = await fetch(`${server.issuer}/api/check-status?request_id=${requestId}`);
    expect(await status.json()).toEqual({ status: 'completed' });
    const { rows } = await server.services.db.query<{ agent_id: string }>('SELECT agent_id FROM auth_requests WHERE id = $1', [requestId]);
    expect(rows[0].agent_id).toBe(agent.agent_id);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('moves on at once when the agent authenticated before the page first asked', async () => {
    const { context, page, problems } = await openBrowser();
    // Hold the page's first check-status until the agent is through: a long poll that waited for
    // the next change from there (25 s) would miss the one the page is waiting for.
    let agentDone!: () => void;
    const authenticated = new Promise<void>((resolve) => (agentDone = resolve));
    const asked: string[] = [];
    await page.route('**/api/check-status?**', async (route) => {
      asked.push(route.request().url());
      await authenticated;
      await route.continue();
    });
    await clickSignIn(page, site, server);
    const requestId = (await page.locator('meta[name="request-id"]').getAttribute('content'))!;
    await agentAuthenticates(server, requestId);
    agentDone();
    expect((await callbackQuery(page, site)).code).toMatch(/^aa_code_/);
    expect(new URL(asked[0]).searchParams.get('last_status')).toBe('pending');
    expect(problems).toEqual([]);
    await context.close();
  });

  it('completes two sign-ins in two tabs of one browser, each with its own binding cookie, dropped once used', async () => {
    const { context, page, problems } = await openBrowser();
    const tabs = [page, await context.newPage()];
    for (const tab of tabs) await clickSignIn(tab, site, server);
    const ids = await Promise.all(tabs.map(async (tab) => (await tab.locator('meta[name="request-id"]').getAttribute('content'))!));
    expect(ids[0]).not.toBe(ids[1]);
    expect((await context.cookies(server.issuer + '/authorize')).map((c) => c.name).sort()).toEqual(ids.map((id) => `agent_auth_${id}`).sort());
    for (const id of [...ids].reverse()) await agentAuthenticates(server, id);
    for (const tab of tabs) expect((await callbackQuery(tab, site)).code).toMatch(/^aa_code_/);
    expect(await context.cookies(server.issuer + '/authorize')).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('stops waiting and says so when the request is gone (purged)', async () => {
    const { context, page } = await openBrowser();
    await clickSignIn(page, site, server);
    const requestId = (await page.locator('meta[name="request-id"]').getAttribute('content'))!;
    await server.services.db.query('DELETE FROM auth_requests WHERE id = $1', [requestId]);
    await page.locator('#error-code').waitFor({ timeout: 15_000 });
    expect(await page.locator('#error-code').textContent()).toBe('not_found');
    await context.close();
  });

  it('without JavaScript, the noscript refresh gets the browser to the callback', async () => {
    const { context, page, problems } = await openBrowser({ javaScriptEnabled: false });
    const state = await clickSignIn(page, site, server);
    const requestId = await page.locator('meta[name="request-id"]').getAttribute('content');
    expect(requestId).toMatch(/^req_/);
    await agentAuthenticates(server, requestId!);
    const query = await callbackQuery(page, site);
    expect(query.code).toMatch(/^aa_code_/);
    expect(query.state).toBe(state);
    expect(query.iss).toBe(server.issuer);
    expect(problems).toEqual([]);
    await context.close();
  });
});

describe(`a real browser with REQUIRE_APPROVAL=true (${storeName})`, { timeout: 60_000 }, () => {
  let server: ListeningServer;
  let site: Website;
  beforeAll(async () => {
    server = await startListeningServer({ REQUIRE_APPROVAL: 'true' });
    site = await startWebsite(server);
  });
  afterAll(async () => {
    await site?.close();
    await server?.close();
  });

  /** Up to the approval page, which the waiting page reaches by itself. */
  async function toApprovalPage() {
    const opened = await openBrowser();
    const state = await clickSignIn(opened.page, site, server);
    const requestId = (await opened.page.locator('meta[name="request-id"]').getAttribute('content'))!;
    const agent = await agentAuthenticates(server, requestId);
    await opened.page.getByRole('button', { name: 'Approve' }).waitFor({ timeout: 15_000 });
    expect(opened.page.url()).toBe(`${server.issuer}/authorize/complete?request_id=${requestId}`);
    return { ...opened, state, requestId, agent };
  }

  it('Approve sends the browser to the callback with a code', async () => {
    const { context, page, problems, state, agent } = await toApprovalPage();
    const text = (await page.locator('main').textContent())!;
    expect(text).toContain(agent.agent_id);
    expect(text).toContain('claude-browser-test');
    expect(text).toContain('owner@example.com');

    await page.getByRole('button', { name: 'Approve' }).click();
    const query = await callbackQuery(page, site);
    expect(query.code).toMatch(/^aa_code_/);
    expect(query.state).toBe(state);
    expect(query.iss).toBe(server.issuer);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('Deny sends the browser to the callback with error=access_denied and no code', async () => {
    const { context, page, problems, state, requestId } = await toApprovalPage();
    await page.getByRole('button', { name: 'Deny' }).click();
    const query = await callbackQuery(page, site);
    expect(query.error).toBe('access_denied');
    expect(query.code).toBeUndefined();
    expect(query.state).toBe(state);
    expect(query.iss).toBe(server.issuer);
    const status = await fetch(`${server.issuer}/api/check-status?request_id=${requestId}`);
    expect(await status.json()).toMatchObject({ status: 'error', error: 'access_denied' });
    expect(problems).toEqual([]);
    await context.close();
  });
});

describe(`a real browser waits too long (${storeName})`, { timeout: 60_000 }, () => {
  let server: ListeningServer;
  let site: Website;
  beforeAll(async () => {
    server = await startListeningServer({ AUTH_REQUEST_TTL_SECONDS: '5' });
    site = await startWebsite(server);
  });
  afterAll(async () => {
    await site?.close();
    await server?.close();
  });

  it('ends on the error page saying the request expired', async () => {
    const { context, page, problems } = await openBrowser();
    await clickSignIn(page, site, server);
    const requestId = await page.locator('meta[name="request-id"]').getAttribute('content');

    // No agent comes: the page notices the expiry and shows why it cannot continue.
    await page.locator('#error-code').waitFor({ timeout: 15_000 });
    expect(page.url()).toBe(`${server.issuer}/authorize/complete?request_id=${requestId}`);
    expect(await page.locator('#error-code').textContent()).toBe('request_expired');
    expect(await page.locator('main').textContent()).toMatch(/expired/);
    // The error page itself is a 400; the browser may say so, nothing else may go wrong.
    expect(problems.filter((p) => !/status of 400/.test(p))).toEqual([]);
    await context.close();
  });
});
