import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../../examples/agent/agent.js';
import { SIGN_IN_BUTTON_CSS } from '../../src/routes/assets.js';
import { seriousViolations } from '../helpers/axe.js';
import { describeInChromium } from '../helpers/chromium.js';
import { storeName } from '../helpers/database.js';
import { type ListeningServer, startListeningServer } from '../helpers/listening.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** The button snippet exactly as docs/websites.md gives it to website developers. */
const snippet = (() => {
  const docs = readFileSync(new URL('../../docs/websites.md', import.meta.url), 'utf8');
  const block = [...docs.matchAll(/```html\n([\s\S]*?)```/g)].map((m) => m[1]).find((html) => html.includes('class="sign-in-with-agent"'));
  if (!block) throw new Error('docs/websites.md has no button snippet');
  return block;
})();

describe(`the "Sign in with agent" stylesheet (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it('is served under its stable name, cached for a day, loadable by other sites, pointing at its immutable name', async () => {
    const res = await server.app.inject({ url: '/assets/sign-in-with-agent.css' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/css; charset=utf-8');
    expect(res.headers['cache-control']).toBe('public, max-age=86400');
    expect(res.headers['cross-origin-resource-policy']).toBe('cross-origin');
    expect(res.headers['content-location']).toBe(SIGN_IN_BUTTON_CSS);
    expect(res.body).toContain('.sign-in-with-agent:focus-visible');

    const hashed = await server.app.inject({ url: SIGN_IN_BUTTON_CSS });
    expect(hashed.statusCode).toBe(200);
    expect(hashed.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(hashed.headers['cross-origin-resource-policy']).toBe('cross-origin');
    expect(hashed.body).toBe(res.body);
  });

  it('answers 304 to a cache that holds the current version, and 404 to a name with another hash', async () => {
    const { headers } = await server.app.inject({ url: '/assets/sign-in-with-agent.css' });
    const revalidated = await server.app.inject({ url: '/assets/sign-in-with-agent.css', headers: { 'if-none-match': String(headers.etag) } });
    expect(revalidated.statusCode).toBe(304);
    expect(revalidated.body).toBe('');
    expect((await server.app.inject({ url: '/assets/sign-in-with-agent.000000000000.css' })).statusCode).toBe(404);
  });
});

// SCREENSHOTS=1 refreshes the button's pictures for the README.
const SCREENSHOTS = process.env.SCREENSHOTS === '1';
const screenshotDir = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
describeInChromium('the button rendering test')(`the button from docs/websites.md on another site, in Chromium (${storeName})`, () => {
  let server: ListeningServer;
  let website: Server;
  let websiteUrl: string;
  let browser: Browser;

  beforeAll(async () => {
    server = await startListeningServer();
    // "localhost" against the server's 127.0.0.1: another site, so the stylesheet load is cross-site.
    const page = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="color-scheme" content="light dark"><title>Shop</title></head>
<body><main><h1>Shop</h1>${snippet.replace('https://auth.example', server.issuer)}</main></body></html>`;
    website = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page));
    await new Promise<void>((resolve) => website.listen(0, 'localhost', resolve));
    websiteUrl = `http://localhost:${(website.address() as { port: number }).port}/`;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => website?.close(resolve));
    await server?.close();
  });

  async function open(colorScheme: 'light' | 'dark'): Promise<Page> {
    const page = await browser.newPage({ colorScheme });
    await page.goto(websiteUrl);
    return page;
  }

  for (const scheme of ['light', 'dark'] as const) {
    it(`is styled by the cross-site stylesheet and passes axe (${scheme})`, async () => {
      const page = await open(scheme);
      const button = page.getByRole('link', { name: 'Sign in with agent' });
      const style = await button.evaluate((el) => {
        const s = getComputedStyle(el);
        return { display: s.display, minHeight: s.minHeight, background: s.backgroundColor };
      });
      expect(style).toEqual({ display: 'inline-flex', minHeight: '44px', background: scheme === 'dark' ? 'rgb(22, 27, 34)' : 'rgb(255, 255, 255)' });
      expect(await seriousViolations(page)).toEqual([]);
      if (SCREENSHOTS) {
        const box = (await button.boundingBox())!;
        const clip = { x: box.x - 16, y: box.y - 16, width: box.width + 32, height: box.height + 32 };
        await page.screenshot({ path: `${screenshotDir}sign-in-with-agent-${scheme}.png`, clip });
      }
      await page.close();
    });
  }

  it('shows a focus ring when reached with the keyboard', async () => {
    const page = await open('light');
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement;
      const s = getComputedStyle(el);
      return { text: el.textContent?.trim(), outline: `${s.outlineStyle} ${s.outlineWidth}` };
    });
    expect(focused).toEqual({ text: 'Sign in with agent', outline: 'solid 3px' });
    await page.close();
  });
});
