import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchChromium } from '../examples/agent/agent.js';
import { AgentAuthClient } from '../src/agent/index.js';
import { describeInChromium } from './helpers/chromium.js';
import { storeName } from './helpers/database.js';
import { freePort, type ListeningServer, startListeningServer } from './helpers/listening.js';
import { repoRoot } from './helpers/process.js';

interface Example {
  /** `npm run example:<name>`, as its file's header and docs/websites.md give it. */
  name: string;
  /** The redirect URI to register, under the site's origin. */
  callback: string;
  /** What its home page offers: a link, or a button of a form (Auth.js signs in on a POST). */
  control: 'link' | 'button';
  /** Variables beyond ISSUER, CLIENT_ID, CLIENT_SECRET and PORT. */
  env?: Record<string, string>;
}

const EXAMPLES: Example[] = [
  { name: 'website', callback: '/callback', control: 'link' },
  { name: 'fetch-website', callback: '/callback', control: 'link' },
  {
    name: 'better-auth',
    callback: '/api/auth/callback/agent-auth',
    control: 'link',
    env: { BETTER_AUTH_SECRET: 'example-site-secret-0123456789abcdef', OIDC: 'true' },
  },
  {
    name: 'authjs',
    callback: '/auth/callback/agent-auth',
    control: 'button',
    env: { AUTH_SECRET: 'example-site-secret-0123456789abcdef', OIDC: 'true' },
  },
];

/** `npm run example:<name>` in its own process group (npm, its shell and node go together), once it says it listens. */
async function runExample(name: string, env: Record<string, string>): Promise<ChildProcess> {
  const child = spawn('npm', ['run', '--silent', `example:${name}`], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const listening = (d: Buffer) => {
      output += d;
      if (/ (on|at) http:\/\/localhost:\d+/.test(output)) resolve();
    };
    child.stdout!.on('data', listening);
    child.stderr!.on('data', (d) => (output += d));
    child.on('exit', (code) => reject(new Error(`npm run example:${name} exited (${code}) before it listened:\n${output}`)));
    setTimeout(() => reject(new Error(`npm run example:${name} did not listen within 60 s:\n${output}`)), 60_000).unref();
  });
  return child;
}

describeInChromium('the example websites')(`every example website, run by its command and signed in to by clicking its button (${storeName})`, () => {
  let server: ListeningServer;
  let browser: Browser;
  const running: ChildProcess[] = [];

  beforeAll(async () => {
    // OpenID Connect mode: Better Auth and Auth.js take the user from the ID token; the others ignore it.
    server = await startListeningServer({ ID_TOKEN_SIGNING_ALG: 'ES256' });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    for (const child of running) if (child.pid && child.exitCode === null) process.kill(-child.pid, 'SIGTERM');
    await browser?.close();
    await server?.close();
  });

  it('lists every example website here, and gives each a run command', () => {
    const scripts = JSON.parse(readFileSync('package.json', 'utf8')).scripts as Record<string, string>;
    // The MCP server is no website with a sign-in page: test/mcp runs it with the official MCP client.
    const commands = Object.keys(scripts).filter((s) => s.startsWith('example:') && s !== 'example:mcp-server');
    expect(commands.sort()).toEqual(EXAMPLES.map((e) => `example:${e.name}`).sort());
  });

  for (const example of EXAMPLES) {
    it(
      `example:${example.name}: Chromium clicks "Sign in with agent", the agent signs in, the site shows the user`,
      { timeout: 120_000 },
      async () => {
        const port = await freePort();
        const siteUrl = `http://localhost:${port}`;
        const client = await server.createClient([`${siteUrl}${example.callback}`]);
        const owner = await server.createAgent(`${example.name}@example.com`);
        running.push(
          await runExample(example.name, {
            ISSUER: server.issuer,
            CLIENT_ID: client.client_id,
            CLIENT_SECRET: client.client_secret,
            PORT: String(port),
            ...example.env,
          }),
        );
        const page = await browser.newPage();
        try {
          await page.goto(siteUrl);
          // The button docs/websites.md describes: its class, its icon, agent-auth's stylesheet applied (44 px tall at least).
          const control = page.getByRole(example.control, { name: 'Sign in with agent' });
          await expect(control.getAttribute('class')).resolves.toBe('sign-in-with-agent');
          await expect(control.locator('svg[aria-hidden="true"]').count()).resolves.toBe(1);
          await expect(control.evaluate((el) => getComputedStyle(el).minHeight)).resolves.toBe('44px');
          await control.click();
          const agent = new AgentAuthClient({
            baseUrl: server.issuer,
            agentId: owner.agent_id,
            agentSecret: owner.agent_secret,
            model: 'example-model',
          });
          await agent.signIn(page, { expectedWebsite: siteUrl });
          await page.waitForURL((url) => url.origin === siteUrl);
          await expect(page.locator('#email').textContent()).resolves.toBe(`${example.name}@example.com`);
        } finally {
          await page.close();
        }
      },
    );
  }
});
