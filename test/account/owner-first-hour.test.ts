import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { beforeAll, expect, it } from 'vitest';
import { createAssertion, keyFromPrivateKey } from '../../src/agent/index.js';
import { expectAxeCleanEverywhere } from '../helpers/axe.js';
import { describeInChromium } from '../helpers/chromium.js';
import { exchangeCode } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, signInToCode, startAuthorize } from '../helpers/flow.js';
import { portalInChromium, signInByEmailLink } from '../helpers/portal-browser.js';
import type { TestServer } from '../helpers/server.js';

const describe = describeInChromium('an owner’s first hour in the portal');

/**
 * What a new owner meets in Chromium, in the zone of Amsterdam: the sign-in form, an Approvals page
 * with nothing waiting (and then one sign-in, its scope and expiry in words and their zone), the
 * history in sentences, a key pair made in the browser whose downloaded private key signs an agent in,
 * and the layout at a phone's width. axe at 1280 and 390 px, light and dark.
 */
describe(`an owner's first hour in Chromium (${storeName})`, { timeout: 180_000 }, () => {
  const portal = portalInChromium({ timezoneId: 'Europe/Amsterdam', locale: 'en-GB' });
  let server: TestServer;
  let issuer: string;
  let page: Page;
  const problems = portal.problems;
  const email = `owner-${randomBytes(4).toString('hex')}@example.com`;
  let agent: { agent_id: string; agent_secret: string; email: string };
  let website: Awaited<ReturnType<TestServer['createClient']>>;

  beforeAll(async () => {
    ({ server, issuer, page } = portal);
    agent = await server.createAgent(email);
    await server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { name: 'Research assistant' });
    website = await server.createClient(['https://shop.example/callback']);
  });

  it('signs in with the email field under its label, as wide as the form', async () => {
    await page.goto(`${issuer}/account`);
    const label = (await page.locator('label[for="email"]').boundingBox())!;
    const field = (await page.getByLabel('Your email address').boundingBox())!;
    const form = (await page.locator('form[action="/account/email-link"]').boundingBox())!;
    expect(field.y).toBeGreaterThanOrEqual(label.y + label.height);
    expect(field.width).toBeCloseTo(form.width, 0);
    await expectAxeCleanEverywhere(page, 'portal-sign-in');

    await signInByEmailLink(portal, email);
    expect(problems).toEqual([]);
  });

  it('says that nothing is waiting, then shows a sign-in that waits, what it shares and when it expires in words', async () => {
    await page.goto(`${issuer}/account/approvals`);
    await page.getByText('Nothing is waiting for you.').waitFor({ timeout: 10_000 });
    await expectAxeCleanEverywhere(page, 'portal-approvals-empty');

    await page.evaluate(
      async (id) =>
        fetch(`/account/api/agents/${id}`, {
          method: 'PATCH',
          headers: { 'content-type': 'application/json' },
          body: '{"approval_policy":"always"}',
        }),
      agent.agent_id,
    );
    const { requestId } = await startAuthorize(server, website, { scope: 'openid email' });
    expect(
      (await agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret })).json(),
    ).toMatchObject({
      approval: 'pending',
    });
    const item = page.locator('#approvals li');
    await item.waitFor();
    await page.getByText('1 waiting.').waitFor();
    const facts = await item.locator('dl').innerText();
    expect(facts).toContain('Your email address');
    expect(facts).not.toContain('openid');
    // One format everywhere: day, month, time and the zone's name (Amsterdam: CET).
    expect(await item.locator('time').innerText()).toMatch(/^\d{1,2} \w{3} \d{4}, \d{2}:\d{2} CET$/);
    await page.evaluate(
      async (id) =>
        fetch(`/account/api/agents/${id}`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: '{"approval_policy":null}' }),
      agent.agent_id,
    );
    await item.getByRole('button', { name: 'Decline' }).click();
    await page.getByText('Nothing is waiting for you.').waitFor({ timeout: 10_000 });
    expect(problems).toEqual([]);
  });

  it('tells the history in sentences', async () => {
    const { code, verifier } = await signInToCode(server, { client: website, agent, model: 'claude-sonnet-4-5' });
    expect((await exchangeCode(server, website, code, verifier)).statusCode).toBe(200);
    await page.goto(`${issuer}/account/agents/${agent.agent_id}`);
    await page.getByRole('button', { name: 'Revoke Shop (https://shop.example)' }).click();
    await page.getByText('Revoked: Shop has lost this agent’s tokens.').waitFor();
    const signedIn = await signInToCode(server, { client: website, agent, model: 'claude-sonnet-4-5' });
    expect((await exchangeCode(server, website, signedIn.code, signedIn.verifier)).statusCode).toBe(200);
    await page.goto(`${issuer}/account`);
    await page.getByText('Sign all my agents out everywhere…').click();
    await page.getByRole('button', { name: 'Yes, sign all my agents out now' }).click();
    await page.getByText('Done: every website has lost your agents’ tokens.').waitFor();
    const again = await signInToCode(server, { client: website, agent, model: 'claude-sonnet-4-5' });
    expect((await exchangeCode(server, website, again.code, again.verifier)).statusCode).toBe(200);
    await server.adminCall('POST', '/admin/agents/' + agent.agent_id + '/revoke-grants');

    await page.goto(`${issuer}/account/history`);
    const what = await page.locator('#history-table td[data-label="What"]').allInnerTexts();
    expect(what).toContain('You signed Research assistant out of Shop');
    expect(what).toContain('You used the kill switch');
    expect(what).toContain('An operator signed Research assistant out of Shop');
    expect(what).toContain('Research assistant signed in to Shop');
    expect(what).toContain('Research assistant’s sign-in to Shop was declined');
    expect(what.join('\n')).not.toMatch(/owner_|admin_|_/);
    expect(problems).toEqual([]);
  });

  for (const kind of ['Ed25519', 'P-256'] as const) {
    it(`makes a ${kind} key pair in the browser: the public half is listed, the downloaded private key signs the agent in`, async () => {
      await page.goto(`${issuer}/account/agents/${agent.agent_id}`);
      const before = await page.locator('#keys-table tbody tr').count();
      await page.getByLabel('Kind of key').selectOption(kind);
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Make a key and download it' }).click()]);
      expect(download.suggestedFilename()).toMatch(/^agent-key-[\w-]{8}\.pem$/);
      const pem = await readFile((await download.path())!, 'utf8');
      expect(pem).toMatch(/^-----BEGIN PRIVATE KEY-----\n[\w+/=\n]+-----END PRIVATE KEY-----\n$/);
      await page.getByText(`its private key downloaded as ${download.suggestedFilename()}`).waitFor();
      const rows = page.locator('#keys-table tbody tr');
      await expect(rows.count()).resolves.toBe(before + 1);
      await expect(rows.locator('td[data-label="Algorithm"]').allInnerTexts()).resolves.toContain(kind === 'Ed25519' ? 'EdDSA' : 'ES256');

      // The file as the agent SDK reads it (privateKey: the PEM text): its assertion authenticates.
      const { requestId } = await startAuthorize(server, website);
      const assertion = await createAssertion(await keyFromPrivateKey(pem), { agentId: agent.agent_id, issuer, requestId });
      const res = await server.app.inject({
        method: 'POST',
        url: '/api/agent/authenticate',
        payload: { request_id: requestId, agent_id: agent.agent_id, agent_assertion: assertion, model: 'model-1' },
      });
      expect(res.statusCode).toBe(200);
      expect(problems).toEqual([]);
    });
  }

  it('lays the pages out for a phone: one line of navigation, choices read whole', async () => {
    // The longest choice: the owner's default, when it is "Ask me for new websites".
    await page.goto(`${issuer}/account/settings`);
    await page.getByLabel('Your approval for your agents’ sign-ins').selectOption('new_website');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Settings saved.').waitFor();
    await page.goto(`${issuer}/account/agents/${agent.agent_id}`);
    await expect(page.getByLabel('Your approval for its sign-ins').inputValue()).resolves.toBe('');
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 844 });
      const tops = await page.locator('header nav a').evaluateAll((links) => links.map((a) => Math.round(a.getBoundingClientRect().top)));
      expect(new Set(tops).size, `navigation at ${width}px`).toBe(1);
      const right = await page
        .locator('header nav a')
        .last()
        .evaluate((a) => a.getBoundingClientRect().right);
      expect(right).toBeLessThanOrEqual(width);
      // The chosen option's words fit in the select (its arrow takes about 2rem).
      const fits = await page.getByLabel('Your approval for its sign-ins').evaluate((select: HTMLSelectElement) => {
        const text = select.options[select.selectedIndex].text;
        const ctx = document.createElement('canvas').getContext('2d')!;
        ctx.font = getComputedStyle(select).font;
        return ctx.measureText(text).width + 32 <= select.clientWidth;
      });
      expect(fits, `the approval choice at ${width}px`).toBe(true);
    }
    await page.setViewportSize({ width: 1280, height: 800 });
    await expectAxeCleanEverywhere(page, 'portal-agent');
    await page.goto(`${issuer}/account/passkeys`);
    await page.getByRole('heading', { name: 'Passkeys on this account', level: 2 }).waitFor();
    await expectAxeCleanEverywhere(page, 'portal-passkeys');
    await page.goto(`${issuer}/account/settings`);
    const sizes = await page.locator('main button').evaluateAll((buttons) => buttons.map((b) => Math.round(b.getBoundingClientRect().height)));
    expect(new Set(sizes).size, `button heights ${sizes}`).toBe(1);
    await expectAxeCleanEverywhere(page, 'portal-settings');
    expect(problems).toEqual([]);
  });
});
