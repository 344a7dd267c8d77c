import { randomBytes } from 'node:crypto';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchChromium } from '../../examples/agent/agent.js';
import { describeInChromium, withVirtualAuthenticator } from '../helpers/chromium.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, startAuthorize } from '../helpers/flow.js';
import { startPortalServer } from '../helpers/owner.js';
import type { TestServer } from '../helpers/server.js';
import { linkIn, startSmtp, type TestSmtp } from '../helpers/smtp.js';

const describe = describeInChromium('the portal’s step-up in a real browser');

/**
 * The portal asks in place when a change that weakens the owner's protection needs a fresh session
 * (Chromium, a virtual authenticator with user verification): with a passkey, "Confirm with your
 * passkey" and the change goes through; without one, a button mails a sign-in link, and what was
 * typed on the page is still there once the link has been used.
 */
describe(`the portal asks for a fresh confirmation in place (${storeName})`, () => {
  let browser: Browser;
  let smtp: TestSmtp;
  let server: TestServer;
  let issuer: string;

  beforeAll(async () => {
    browser = await launchChromium();
    smtp = await startSmtp();
    ({ server, issuer } = await startPortalServer(smtp));
  });
  afterAll(async () => {
    await server?.close();
    await smtp?.close();
    await browser?.close();
  });

  const stale = (email: string) =>
    server.services.db.query(
      `UPDATE owner_sessions SET authenticated_at = now() - interval '301 seconds' WHERE user_id = (SELECT id FROM users WHERE email = $1)`,
      [email],
    );
  const settingsOf = async (email: string) =>
    (
      await server.services.db.query<{ approval_policy: string; notify_new_website: boolean }>(
        `SELECT approval_policy, notify_new_website FROM users WHERE email = $1`,
        [email],
      )
    ).rows[0];

  async function signedIn(context: BrowserContext, email: string, page?: Page): Promise<Page> {
    page ??= await context.newPage();
    await page.goto(`${issuer}/account`);
    await page.getByLabel('Your email address').fill(email);
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await useLink(page, email);
    return page;
  }
  async function useLink(page: Page, email: string) {
    await page.goto(linkIn(await smtp.next(email, 5000, (m) => m.subject.includes('sign-in link'))));
    await page.locator('form button[type=submit]').click();
    await page.waitForURL(`${issuer}/account`);
  }

  it('with a passkey: a stale session is asked for it in place, and the change (a lower policy, a key made in the browser, a deletion) goes through', async () => {
    const email = `owner-${randomBytes(4).toString('hex')}@example.com`;
    const agent = await server.createAgent(email);
    const context = await browser.newContext();
    const page = await context.newPage();
    // The virtual authenticator belongs to this page: the owner stays on it.
    await withVirtualAuthenticator(context, page);
    const owner = await signedIn(context, email, page);
    const problems: string[] = [];
    owner.on('pageerror', (err) => problems.push(err.message));
    await owner.goto(`${issuer}/account/passkeys`);
    await owner.getByRole('button', { name: 'Add a passkey' }).click();
    await owner.locator('.passkey-name', { hasText: 'Passkey' }).waitFor();

    await server.services.db.query(`UPDATE users SET approval_policy = 'always' WHERE email = $1`, [email]);
    await stale(email);
    await owner.goto(`${issuer}/account/settings`);
    await owner.getByLabel('Your approval for your agents’ sign-ins').selectOption('never');
    await owner.getByRole('button', { name: 'Save' }).click();
    await owner.getByRole('button', { name: 'Confirm with your passkey' }).click();
    await owner.getByText('Settings saved.').waitFor();
    expect((await settingsOf(email)).approval_policy).toBe('never');
    expect((await smtp.next(email, 5000, (m) => m.text.includes('to “Never ask me”'))).subject).toContain('lowered its protection');

    // A key made in the browser for the agent: asked too, then registered and downloaded.
    await stale(email);
    await owner.goto(`${issuer}/account/agents/${agent.agent_id}`);
    await owner.getByRole('button', { name: 'Make a key and download it' }).click();
    const [download] = await Promise.all([owner.waitForEvent('download'), owner.getByRole('button', { name: 'Confirm with your passkey' }).click()]);
    await owner.getByText(`its private key downloaded as ${download.suggestedFilename()}`).waitFor();
    const keys = await server.services.db.query(`SELECT 1 FROM agent_keys WHERE agent_id = $1`, [agent.agent_id]);
    expect(keys.rowCount).toBe(1);

    // Deleting the passkey: asked again once stale, then gone.
    await stale(email);
    await owner.goto(`${issuer}/account/passkeys`);
    await owner.getByRole('button', { name: 'Delete' }).click();
    await owner.getByRole('button', { name: 'Confirm with your passkey' }).click();
    await owner.getByText('No passkey yet.').waitFor();
    expect(problems).toEqual([]);
    await context.close();
  }, 120_000);

  it('without a passkey: the page offers a sign-in link, and once it is used the same form, as typed, goes through', async () => {
    const email = `owner-${randomBytes(4).toString('hex')}@example.com`;
    const agent = await server.createAgent(email);
    const context = await browser.newContext();
    const owner = await signedIn(context, email);
    await stale(email);
    await owner.goto(`${issuer}/account/settings`);
    await owner.getByLabel('Mail me the first time one of my agents signs in to a website').uncheck();
    await owner.getByLabel('Your approval for your agents’ sign-ins').selectOption('new_website');
    await owner.getByRole('button', { name: 'Save' }).click();
    await owner.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await owner.getByText('A sign-in link is on its way').waitFor();
    expect(await settingsOf(email)).toEqual({ approval_policy: 'never', notify_new_website: true });

    // The link, used in another tab of this browser; the settings page still shows what was chosen.
    await useLink(await context.newPage(), email);
    expect(await owner.getByLabel('Mail me the first time one of my agents signs in to a website').isChecked()).toBe(false);
    expect(await owner.getByLabel('Your approval for your agents’ sign-ins').inputValue()).toBe('new_website');
    await owner.getByRole('button', { name: 'Save' }).click();
    await owner.getByText('Settings saved.').waitFor();
    expect(await settingsOf(email)).toEqual({ approval_policy: 'new_website', notify_new_website: false });

    // Approving stale, without a passkey: the approvals page offers the link in place too.
    const { requestId } = await startAuthorize(server, await server.createClient());
    await agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    await stale(email);
    await owner.goto(`${issuer}/account/approvals`);
    await owner.getByRole('button', { name: 'Approve' }).click();
    await owner.getByRole('button', { name: 'Email me a sign-in link' }).waitFor();
    await context.close();
  }, 120_000);
});
