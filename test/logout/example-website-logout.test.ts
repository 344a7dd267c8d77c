/**
 * The example website (examples/website, OIDC=true) ends its own session when agent-auth tells it a
 * grant ended: Chromium signs in through the site's real button, an operator pulls the agent's kill
 * switch, and the site's session is gone, with the logout token verified against the JWKS.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchChromium } from '../../examples/agent/agent.js';
import { type RunningWebsite, startWebsite } from '../../examples/website/server.js';
import { AgentAuthClient } from '../../src/agent/index.js';
import { type LogoutSender, startLogoutSender } from '../../src/logout/sender.js';
import { describeInChromium } from '../helpers/chromium.js';
import { storeName } from '../helpers/database.js';
import { freePort, type ListeningServer, startListeningServer } from '../helpers/listening.js';
import { within } from '../helpers/poll.js';

describeInChromium('back-channel logout at the example website')(`the example website signs the agent out on a logout token (${storeName})`, () => {
  let server: ListeningServer;
  let sender: LogoutSender;
  let browser: Browser;
  let site: RunningWebsite;
  let owner: { agent_id: string; agent_secret: string; email: string };

  beforeAll(async () => {
    server = await startListeningServer({ ID_TOKEN_SIGNING_ALG: 'RS256' });
    sender = await startLogoutSender(
      { ...server.services, signingKeys: server.services.signingKeys!, log: server.app.log },
      { timeout: 5, lease: 15, poll: 0.2, firstDelay: 1, maxDelay: 2, giveUpAfter: 3600 },
    );
    const port = await freePort();
    const siteUrl = `http://localhost:${port}`;
    const registered = await server.adminCall('POST', '/admin/clients', {
      name: 'Example shop',
      redirect_uris: [`${siteUrl}/callback`],
      backchannel_logout_uri: `${siteUrl}/backchannel-logout`,
    });
    expect(registered.statusCode, JSON.stringify(registered.json)).toBe(201);
    const { client_id: clientId, client_secret: clientSecret } = registered.json;
    site = await startWebsite({ issuer: server.issuer, clientId, clientSecret, port, host: 'localhost', oidc: true });
    owner = await server.createAgent('logout-example@example.com');
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await site?.close();
    await sender?.stop();
    await server?.close();
  });

  it('signs in through the site’s button; after the operator’s revocation the site’s session is gone', { timeout: 120_000 }, async () => {
    const page = await browser.newPage();
    try {
      await page.goto(site.url);
      await page.getByRole('link', { name: 'Sign in with agent' }).click();
      const agent = new AgentAuthClient({ baseUrl: server.issuer, agentId: owner.agent_id, agentSecret: owner.agent_secret, model: 'example-model' });
      await agent.signIn(page, { expectedWebsite: site.url });
      await page.waitForURL((url) => url.origin === site.url);
      await expect(page.locator('#email').textContent()).resolves.toBe('logout-example@example.com');

      // The site refuses anything that is not a logout token of ours.
      const forged = await fetch(`${site.url}/backchannel-logout`, { method: 'POST', body: new URLSearchParams({ logout_token: 'e30.e30.' }) });
      expect(forged.status).toBe(400);
      await page.reload();
      await expect(page.locator('#email').textContent()).resolves.toBe('logout-example@example.com');

      // The operator's kill switch for this agent.
      expect((await server.adminCall('POST', `/admin/agents/${owner.agent_id}/revoke-grants`)).json).toEqual({ revoked: 1 });
      expect(
        await within(
          10_000,
          async () => {
            await page.reload();
            return (await page.locator('#sign-in').count()) === 1;
          },
          200,
        ),
      ).toBe(true);
      expect(await page.locator('#signed-in').count()).toBe(0);
      // The sender records the delivery once the website has answered, so the row may lag its sign-out.
      const delivery = async () =>
        (
          await server.services.db.query<{ status: string; attempts: number }>(`SELECT status, attempts FROM logout_deliveries WHERE agent_id = $1`, [
            owner.agent_id,
          ])
        ).rows;
      expect(await within(2000, async () => (await delivery())[0]?.status === 'delivered')).toBe(true);
      expect(await delivery()).toEqual([{ status: 'delivered', attempts: 1 }]);
    } finally {
      await page.close();
    }
  });
});
