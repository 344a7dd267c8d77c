import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { beforeAll, expect, it } from 'vitest';
import { expectAxeCleanEverywhere } from '../helpers/axe.js';
import { describeInChromium } from '../helpers/chromium.js';
import { exchangeCode, introspect } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { signInToCode } from '../helpers/flow.js';
import { portalInChromium, signInByEmailLink } from '../helpers/portal-browser.js';
import type { TestServer } from '../helpers/server.js';
import { linkIn, type TestSmtp } from '../helpers/smtp.js';

const describe = describeInChromium('the owners’ portal in a real browser');

/**
 * An owner clicks through the portal in Chromium: signs in with the link the real SMTP server
 * received, sees the websites of the agent an operator registered for them, and revokes one; the
 * website's token is then inactive at /introspect while the other website's still works. It adds
 * and removes a key pasted as a JWK, and rotates the secret with and without signing the agent
 * out of every website. Every page is checked with axe at 1280 and 390 px, light and dark. The issuer is http://localhost so
 * that the browser sends the same Origin the API expects.
 */
describe(`the owners' portal in Chromium (${storeName})`, { timeout: 180_000 }, () => {
  const portal = portalInChromium();
  let smtp: TestSmtp;
  let server: TestServer;
  let issuer: string;
  let page: Page;
  const problems = portal.problems;
  const email = `owner-${randomBytes(4).toString('hex')}@example.com`;
  let agent: { agent_id: string; agent_secret: string; email: string };
  beforeAll(() => void ({ smtp, server, issuer, page } = portal));

  /** The agent signs in to a website by the normal flow; the website's tokens. */
  async function signInAt(website: { client_id: string; client_secret: string; redirect_uris: string[] }, signer: typeof agent, model: string) {
    const { code, verifier } = await signInToCode(server, { client: website, agent: signer, model });
    const res = await exchangeCode(server, website, code, verifier);
    expect(res.statusCode).toBe(200);
    return res.json() as { access_token: string; refresh_token: string };
  }

  it('signs in by email link, revokes one website of an agent, and the other keeps working', async () => {
    agent = await server.createAgent(email);
    await server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { name: 'Research assistant' });
    const shop = await server.createClient(['https://shop.example/callback']);
    const news = await server.createClient(['https://news.example/callback']);
    await server.adminCall('PATCH', `/admin/clients/${news.client_id}`, { name: 'Daily News' });
    const atShop = await signInAt(shop, agent, 'claude-sonnet-4-5');
    const atNews = await signInAt(news, agent, 'claude-sonnet-4-5');

    await page.goto(`${issuer}/account`);
    await expectAxeCleanEverywhere(page, 'portal-sign-in');
    await signInByEmailLink(portal, email);
    await page.getByRole('heading', { name: 'Your account' }).waitFor();
    await expect(page.locator('#agents-table').textContent()).resolves.toContain('Daily News');
    await expectAxeCleanEverywhere(page, 'portal-agents');

    await page.getByRole('link', { name: 'Research assistant' }).click();
    await page.waitForURL(`${issuer}/account/agents/${agent.agent_id}`);
    const rows = page.locator('#websites-table tbody tr');
    await expect(rows.count()).resolves.toBe(2);
    await expectAxeCleanEverywhere(page, 'portal-agent');

    await page.getByRole('button', { name: 'Revoke Shop (https://shop.example)' }).click();
    await page.getByText('Revoked: Shop has lost this agent’s tokens.').waitFor();
    await expect(rows.count()).resolves.toBe(1);
    await expect(rows.textContent()).resolves.toContain('Daily News');
    expect((await introspect(server, shop, atShop.access_token)).json()).toEqual({ active: false });
    expect((await introspect(server, news, atNews.access_token)).json()).toMatchObject({ active: true, model: 'claude-sonnet-4-5' });

    for (const [link, heading, name] of [
      ['History', 'History', 'portal-history'],
      ['Settings', 'Settings', 'portal-settings'],
      ['Passkeys', 'Your passkeys', 'portal-passkeys'],
      ['Approvals', 'Sign-ins waiting for you', 'portal-approvals'],
    ]) {
      await page.getByRole('navigation').getByRole('link', { name: link }).click();
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
      await expectAxeCleanEverywhere(page, name);
    }
    await page.getByRole('navigation').getByRole('link', { name: 'History' }).click();
    await expect(page.locator('#history-table').textContent()).resolves.toContain('You signed Research assistant out of Shop');
    expect(problems).toEqual([]);
  });

  it('adds a pasted public key and removes it; rotation signs the agent out of websites only with the box checked', async () => {
    const keys = async () =>
      (await server.adminCall('GET', `/admin/agents/${agent.agent_id}/keys`)).json.keys as { kid: string; jwk: { x: string } }[];
    const pair = generateKeyPairSync('ed25519');
    const jwk = pair.publicKey.export({ format: 'jwk' });
    await page.goto(`${issuer}/account/agents/${agent.agent_id}`);
    await page.getByText('No keys: the agent signs in with its secret.').waitFor();
    const field = page.getByLabel('Add a key: its public JWK (Ed25519 or P-256)');
    const add = page.getByRole('button', { name: 'Add key' });

    // Refusals appear in the form: text that is not JSON, then the private half.
    await field.fill('x: not a key');
    await add.click();
    await page.getByText('Not done: the key is not JSON: paste the whole JWK, braces included.').waitFor();
    await field.fill(JSON.stringify(pair.privateKey.export({ format: 'jwk' }), null, 2));
    await add.click();
    await page.getByText('Not done: jwk holds a private key (member "d"): register only its public half.').waitFor();
    expect(await keys()).toEqual([]);
    // Chromium logs the refusal's 400: expected here, and only here.
    expect(problems.splice(0)).toEqual([expect.stringMatching(/\/keys: Failed to load resource: the server responded with a status of 400/)]);

    await field.fill(JSON.stringify(jwk, null, 2));
    await add.click();
    await page.getByText('Key added: the agent may sign in with it now.').waitFor();
    const [stored] = await keys();
    expect(stored.jwk.x).toBe(jwk.x);
    const rows = page.locator('#keys-table tbody tr');
    await expect(rows.count()).resolves.toBe(1);
    await expect(rows.textContent()).resolves.toContain(stored.kid);
    await expect(rows.textContent()).resolves.toContain('EdDSA');
    await page.getByLabel(`Remove key ${stored.kid}…`).click();
    await expectAxeCleanEverywhere(page, 'portal-agent-keys');
    await page.getByRole('button', { name: 'Yes, remove this key' }).click();
    await page.getByText('Key removed: assertions signed with it are refused from now on.').waitFor();
    await page.getByText('No keys: the agent signs in with its secret.').waitFor();
    expect(await keys()).toEqual([]);

    // Rotation with the box unchecked: only the old secret stops working.
    const mail = await server.createClient(['https://mail.example/callback']);
    const tokens = await signInAt(mail, agent, 'claude-sonnet-4-5');
    const box = page.getByLabel('Also sign this agent out of every website now');
    await expect(box.isChecked()).resolves.toBe(true);
    await box.uncheck();
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByText('Secret rotated. Only the old secret no longer works').waitFor();
    const kept = (await page.locator('#new-secret').textContent())!.trim();
    expect(kept).toMatch(/^aa_as_/);
    expect((await introspect(server, mail, tokens.access_token)).json()).toMatchObject({ active: true });

    // Checked: every website's tokens end too, and the page's websites table says so without a reload
    // (which would lose the secret shown once).
    await page.reload();
    const mailRow = page.locator(`#websites-table tr[data-client="${mail.client_id}"]`);
    await mailRow.waitFor();
    await box.check();
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByText('Secret rotated. The old secret, every website’s tokens of this agent and its sign-ins in flight no longer work').waitFor();
    await page.getByText('None: this agent holds no live sign-in anywhere.').waitFor();
    await expect(mailRow.count()).resolves.toBe(0);
    await expect.poll(async () => (await page.locator('#new-secret').textContent())!.trim()).not.toBe(kept);
    agent.agent_secret = (await page.locator('#new-secret').textContent())!.trim();
    expect((await introspect(server, mail, tokens.access_token)).json()).toEqual({ active: false });
    // The secret shown is the one that works now.
    await signInAt(mail, agent, 'claude-sonnet-4-5');
    expect(problems).toEqual([]);
  });

  it('creates an agent (secret shown once, copied), rotates its secret, deactivates and deletes it', async () => {
    await page.goto(`${issuer}/account`);
    await page.getByLabel('Name').fill('Travel planner');
    await page.getByRole('button', { name: 'Create agent' }).click();
    const secret = page.locator('#new-secret');
    await secret.waitFor();
    const created = (await secret.textContent())!.trim();
    expect(created).toMatch(/^aa_as_/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(created);
    await expectAxeCleanEverywhere(page, 'portal-agent-created');

    await page.getByRole('link', { name: 'Open the agent’s page' }).click();
    await page.getByRole('heading', { name: /Travel planner/ }).waitFor();
    expect(await page.content()).not.toContain(created);
    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.locator('#new-secret').waitFor();
    const rotated = (await page.locator('#new-secret').textContent())!.trim();
    expect(rotated).toMatch(/^aa_as_/);
    expect(rotated).not.toBe(created);

    await page.getByRole('button', { name: 'Deactivate' }).click();
    await page.getByText('Deactivated: it is signed out everywhere').waitFor();
    await page.getByRole('button', { name: 'Reactivate' }).waitFor();

    await page.getByText('Delete this agent…').click();
    await page.getByRole('button', { name: 'Yes, delete Travel planner' }).click();
    await page.waitForURL(`${issuer}/account`);
    await page.getByText('Travel planner deleted.').waitFor();
    await expect(page.locator('#agents-table').textContent()).resolves.not.toContain('Travel planner');
    expect(problems).toEqual([]);
  });

  it('pulls the kill switch after a confirmation', async () => {
    const news = await server.createClient(['https://news2.example/callback']);
    const tokens = await signInAt(news, agent, 'gpt-5');
    await page.goto(`${issuer}/account`);
    await page.getByText('Sign all my agents out everywhere…').click();
    await page.getByRole('button', { name: 'Yes, sign all my agents out now' }).click();
    await page.getByText('Done: every website has lost your agents’ tokens.').waitFor();
    expect((await introspect(server, news, tokens.access_token)).json()).toEqual({ active: false });
    expect(problems).toEqual([]);
  });

  it('signs out everywhere from the settings page', async () => {
    await page.goto(`${issuer}/account/settings`);
    await page.getByRole('button', { name: 'Sign out everywhere' }).click();
    await page.getByRole('button', { name: 'Email me a sign-in link' }).waitFor();
    await page.goto(`${issuer}/account/agents/${agent.agent_id}`);
    expect(page.url()).toBe(`${issuer}/account`);
    expect(problems).toEqual([]);
  });

  it('moves the account to another address from the settings page, once the link mailed there is used', async () => {
    await page.goto(`${issuer}/account`);
    await page.getByLabel('Your email address').fill(email);
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await page.goto(linkIn(await smtp.next(email, 5000, (mail) => mail.subject.includes('sign-in link'))));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${issuer}/account`);

    const moved = `moved-${randomBytes(4).toString('hex')}@example.com`;
    await page.getByRole('navigation').getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel('Move your account to another address').fill(moved);
    await page.getByRole('button', { name: 'Mail a link to the new address' }).click();
    await page.getByText('A link is on its way to the new address.').waitFor();
    // Nothing changes until the new mailbox answers.
    await expect(page.locator('.facts').textContent()).resolves.toContain(email);
    await page.goto(linkIn(await smtp.next(moved, 5000)));
    await page.getByRole('button', { name: /Sign in|Confirm|Use/ }).click();
    await page.waitForURL(`${issuer}/account`);
    await page.getByRole('navigation').getByRole('link', { name: 'Settings' }).click();
    await expect(page.locator('.facts').textContent()).resolves.toContain(moved);
    await expect(page.locator('.facts').textContent()).resolves.toContain('Yes: you used a sign-in link sent to it');
    expect(problems).toEqual([]);
  });
});
