import { randomBytes } from 'node:crypto';
import Fastify from 'fastify';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchChromium } from '../../examples/agent/agent.js';
import { expectAxeCleanEverywhere } from '../helpers/axe.js';
import { describeInChromium, withVirtualAuthenticator } from '../helpers/chromium.js';
import { storeName } from '../helpers/database.js';
import { pkce } from '../helpers/flow.js';
import { freePort } from '../helpers/listening.js';
import { startPortalServer } from '../helpers/owner.js';
import type { TestServer } from '../helpers/server.js';
import { linkIn, startSmtp, type TestSmtp } from '../helpers/smtp.js';

const describe = describeInChromium('passkeys and owner approval in a real browser');

/**
 * The whole story in Chromium with a virtual authenticator (CDP WebAuthn, user verification on):
 * the owner signs in by email link, adds a passkey from the portal's offer, and later approves a
 * sign-in of their agent with it, while the agent's page waits and then lands on the website.
 * WebAuthn takes no IP address as RP id, so the issuer is http://localhost.
 */
describe(`passkeys and owner approval in Chromium (${storeName})`, () => {
  let browser: Browser;
  let smtp: TestSmtp;
  let server: TestServer;
  let issuer: string;
  let site: { url: string; close(): Promise<void> };
  let client: { client_id: string };

  beforeAll(async () => {
    browser = await launchChromium();
    smtp = await startSmtp();
    ({ server, issuer } = await startPortalServer(smtp));
    const sitePort = await freePort();
    const siteUrl = `http://127.0.0.1:${sitePort}`;
    client = await server.createClient([`${siteUrl}/callback`]);
    const app = Fastify();
    app.get('/', async (_request, reply) => {
      const query = new URLSearchParams({
        client_id: client.client_id,
        redirect_uri: `${siteUrl}/callback`,
        response_type: 'code',
        state: randomBytes(16).toString('base64url'),
        code_challenge: pkce().challenge,
        code_challenge_method: 'S256',
      });
      return reply
        .type('text/html')
        .send(`<!doctype html><title>Shop</title><a id="sign-in" href="${issuer}/authorize?${query}">Sign in with agent</a>`);
    });
    app.get('/callback', async (request, reply) =>
      reply
        .type('text/html')
        .send(`<!doctype html><title>Shop callback</title><pre id="query">${new URLSearchParams(request.query as Record<string, string>)}</pre>`),
    );
    await app.listen({ port: sitePort, host: '127.0.0.1' });
    site = { url: siteUrl, close: () => app.close() };
  });
  afterAll(async () => {
    await site?.close();
    await server?.close();
    await smtp?.close();
    await browser?.close();
  });

  it('registers a passkey in the portal, then approves the waiting sign-in with it; the agent’s page lands on the website', async () => {
    const email = `owner-${randomBytes(4).toString('hex')}@example.com`;
    const agent = await server.createAgent(email);

    // The owner: email link, then the portal's offer to add a passkey.
    const ownerContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const owner = await ownerContext.newPage();
    const problems: string[] = [];
    owner.on('pageerror', (err) => problems.push(err.message));
    await withVirtualAuthenticator(ownerContext, owner);
    await owner.goto(`${issuer}/account`);
    await owner.getByLabel('Your email address').fill(email);
    await owner.getByRole('button', { name: 'Email me a sign-in link' }).click();
    const link = linkIn(await smtp.next(email));
    await owner.goto(link);
    await owner.locator('form button[type=submit]').click();
    await owner.waitForURL(`${issuer}/account`);
    await owner.getByRole('link', { name: 'Add a passkey' }).click();
    await owner.waitForURL(`${issuer}/account/passkeys`);
    await owner.getByLabel('Name').fill('Test laptop');
    await owner.getByRole('button', { name: 'Add a passkey' }).click();
    await owner.locator('.passkey-name', { hasText: 'Test laptop' }).waitFor();
    const policy = await owner.evaluate(() =>
      fetch('/account/api/me', {
        method: 'PATCH',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ approval_policy: 'always' }),
      }).then((r) => r.status),
    );
    expect(policy).toBe(200);

    // The agent's browser: the website's button, our page; the agent authenticates; the page waits for the owner.
    const agentContext = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const agentPage = await agentContext.newPage();
    await agentPage.goto(site.url);
    await agentPage.locator('#sign-in').click();
    await agentPage.waitForURL(`${issuer}/authorize?**`);
    const requestId = (await agentPage.locator('meta[name=request-id]').getAttribute('content'))!;
    const auth = await server.app.inject({
      method: 'POST',
      url: '/api/agent/authenticate',
      payload: { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret, model: 'test-model-1' },
    });
    expect(auth.json().approval).toBe('pending');
    await agentPage.locator('#match-code').waitFor();
    const matchCode = (await agentPage.locator('#match-code').textContent())!.trim();
    await expect(agentPage.getByText(`Waiting for ${email} to approve`)).toBeTruthy();
    await expectAxeCleanEverywhere(agentPage, 'owner-approval-waiting');

    // The owner's approvals page shows it (polled) with the same match code; Approve asks the passkey.
    await owner.goto(`${issuer}/account/approvals`);
    await owner.locator('.match-code', { hasText: matchCode }).waitFor();
    await expectAxeCleanEverywhere(owner, 'owner-approvals');
    await owner.getByRole('button', { name: 'Approve' }).click();
    await owner.getByText('Approved.').waitFor();

    // The agent's page moves on by itself, to the website with a code.
    await agentPage.waitForURL(`${site.url}/callback?**`, { timeout: 30_000 });
    expect(new URL(agentPage.url()).searchParams.get('code')).toMatch(/^aa_code_/);
    expect(problems).toEqual([]);

    // And the passkey signs the owner in, without a link.
    await ownerContext.clearCookies();
    await owner.goto(`${issuer}/account`);
    await owner.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await owner.getByRole('heading', { name: 'Your account' }).waitFor();
    await agentContext.close();
    await ownerContext.close();
  }, 120_000);
});
