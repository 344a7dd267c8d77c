import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../examples/agent/agent.js';
import { seriousViolations } from '../helpers/axe.js';
import { describeInChromium } from '../helpers/chromium.js';
import { storeName } from '../helpers/database.js';
import { type ListeningServer, startListeningServer } from '../helpers/listening.js';
import { ADMIN_TOKEN, startTestServer, type TestServer } from '../helpers/server.js';

describe(`GET / on the public listener: the landing page (${storeName})`, () => {
  let server: TestServer;
  let oidc: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ ISSUER: 'https://auth.example' });
    oidc = await startTestServer({ ISSUER: 'https://auth.example', ID_TOKEN_SIGNING_ALG: 'ES256' });
    // Something to leak, if the page leaked anything: a website and an agent.
    await server.createClient();
    await server.createAgent();
  });
  afterAll(async () => {
    await server?.close();
    await oidc?.close();
  });

  it('names the service and links the discovery document, /docs, and where websites, agents and owners go', async () => {
    const res = await server.app.inject({ url: '/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.body).toContain('<title>Sign-in for AI agents · agent-auth</title>');
    expect(res.body).toContain('<h1>agent-auth: sign-in for AI agents</h1>');
    expect(res.body).toContain('<a href="https://auth.example/.well-known/oauth-authorization-server">');
    expect(res.body).toContain('<a href="/docs">/docs</a>');
    expect(res.body).toContain('<a href="/account">your account</a>');
    for (const heading of ['Websites', 'Agents', 'Owners']) expect(res.body).toContain(`<h2>${heading}</h2>`);
    // Every link leads somewhere real on this listener (the portal excepted: it is the owners' room).
    expect((await server.app.inject({ url: '/.well-known/oauth-authorization-server' })).statusCode).toBe(200);
    expect((await server.app.inject({ url: '/docs' })).statusCode).toBeLessThan(400);
  });

  it('links OpenID Connect discovery in OpenID Connect mode', async () => {
    const res = await oidc.app.inject({ url: '/' });
    expect(res.body).toContain('<a href="https://auth.example/.well-known/openid-configuration">');
  });

  it('shows no secret and no id', async () => {
    const { body } = await server.app.inject({ url: '/' });
    expect(body).not.toMatch(/\b(client|agent|req|grant)_[\w-]{8,}/);
    expect(body).not.toContain(ADMIN_TOKEN);
    expect(body).not.toContain('name="request-id"');
  });

  it('has the headers of every other page: a CSP with nonces, no framing, no referrer, no caching', async () => {
    const res = await server.app.inject({ url: '/' });
    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    const styleNonce = /style-src 'self' 'nonce-([0-9a-f]{32})'/.exec(csp)![1];
    expect(res.body).toContain(`<style nonce="${styleNonce}">`);
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['cache-control']).toBe('no-store');
    // A fresh nonce on every answer.
    expect((await server.app.inject({ url: '/' })).headers['content-security-policy']).not.toBe(csp);
  });

  it('is not on the admin listener', async () => {
    const res = await server.admin.inject({ url: '/' });
    expect(res.statusCode).toBe(404);
  });
});

describeInChromium('the landing page in Chromium')(`the landing page in Chromium (${storeName})`, () => {
  let server: ListeningServer;
  let browser: Browser;
  beforeAll(async () => {
    server = await startListeningServer();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  it('has no serious or critical axe finding, light and dark, desktop and phone', { timeout: 60_000 }, async () => {
    const page = await browser.newPage();
    for (const width of [1280, 390]) {
      await page.setViewportSize({ width, height: 900 });
      await page.goto(`${server.issuer}/`);
      for (const colorScheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme });
        expect(await seriousViolations(page), `${width}px ${colorScheme}`).toEqual([]);
      }
    }
    // Nothing the CSP refused: the page's style applied (the layout's flex column).
    expect(await page.evaluate(() => getComputedStyle(document.querySelector('.page')!).display)).toBe('flex');
    await page.close();
  });
});
