/**
 * `npm run screenshots`: every state of the sign-in pages, the owners' portal and the console, at desktop (1200×900) and
 * mobile (390×844) widths, in light and dark mode, into docs/screenshots/<state>-<width>-<scheme>.png.
 * Starts the server on an in-memory store with a few websites, agents and sign-ins, and drives
 * Debian's Chromium (CHROMIUM_PATH to use another). Rerun it after changing a view.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../examples/agent/agent.js';
import { loadConfig } from '../src/config.js';
import { newSessionSecret, SESSION_LIFETIMES, sessionCookie } from '../src/owners/sessions.js';
import { type RunningServer, startServer } from '../src/server.js';

const OUT = fileURLToPath(new URL('../docs/screenshots/', import.meta.url));
const ADMIN_TOKEN = `screenshots-${randomBytes(16).toString('hex')}`;
const VIEWPORTS = { desktop: { width: 1200, height: 900 }, mobile: { width: 390, height: 844 } };
const SCHEMES = ['light', 'dark'] as const;

async function admin(server: RunningServer, path: string, body: unknown) {
  const res = await fetch(`${server.adminUrl}/admin${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** One whole sign-in over HTTP, as browser, agent and website would do it: a grant. */
async function signIn(
  server: RunningServer,
  client: { client_id: string; client_secret: string; redirect_uris: string[] },
  agent: { agent_id: string; agent_secret: string },
  model: string,
) {
  const verifier = randomBytes(32).toString('base64url');
  const query = new URLSearchParams({
    client_id: client.client_id,
    redirect_uri: client.redirect_uris[0],
    response_type: 'code',
    state: randomBytes(8).toString('hex'),
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  });
  const page = await fetch(`${server.url}/authorize?${query}`);
  const requestId = /<meta name="request-id" content="([^"]+)">/.exec(await page.text())![1];
  const cookie = page.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  await fetch(`${server.url}/api/agent/authenticate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret, model }),
  });
  const approval = await (await fetch(`${server.url}/authorize/complete?request_id=${requestId}`, { headers: { cookie } })).text();
  const csrf = /name="csrf_token" value="([^"]+)"/.exec(approval)![1];
  const decided = await fetch(`${server.url}/authorize/decision`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ request_id: requestId, csrf_token: csrf, decision: 'approve' }),
  });
  const code = new URL(decided.headers.get('location')!).searchParams.get('code')!;
  const token = await fetch(`${server.url}/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: client.redirect_uris[0],
      client_id: client.client_id,
      client_secret: client.client_secret,
    }),
  });
  if (!token.ok) throw new Error(`token: ${await token.text()}`);
}

async function main() {
  // Any free ports; the pages link relatively, so the issuer need not name them.
  const server = await startServer(
    loadConfig({ PORT: '0', ADMIN_PORT: '0', HOST: '127.0.0.1', DATA_DIR: 'memory', ADMIN_TOKEN, REQUIRE_APPROVAL: 'true', LOG_LEVEL: 'warn' }),
  );
  const browser: Browser = await launchChromium();
  try {
    const shop = await admin(server, '/clients', { name: 'Acme Shop', redirect_uris: ['https://shop.acme.example/auth/callback'] });
    const recipes = await admin(server, '/clients', { name: 'Recipe Box', redirect_uris: ['https://recipes.example.org/callback'] });
    const research = await admin(server, '/agents', { email: 'alice@example.com', name: 'Research assistant' });
    const travel = await admin(server, '/agents', { email: 'alice@example.com', name: 'Travel planner' });
    await admin(server, '/agents', { email: 'bob@example.com', name: 'Inbox helper' });
    await signIn(server, shop, research, 'claude-sonnet-4-5');
    await signIn(server, recipes, research, 'claude-sonnet-4-5');
    await signIn(server, shop, travel, 'gpt-5');
    const [revoked] = (
      await (await fetch(`${server.adminUrl}/admin/agents/${travel.agent_id}/grants`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })).json()
    ).grants;
    await admin(server, `/grants/${revoked.grant_id}/revoke`, {});

    const agentAuthenticates = async (requestId: string, agent: { agent_id: string; agent_secret: string } = research) => {
      await fetch(`${server.url}/api/agent/authenticate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret, model: 'claude-sonnet-4-5' }),
      });
    };
    // An agent of alice's whose every sign-in waits for her approval (owner approval, not REQUIRE_APPROVAL's page).
    const shopper = await admin(server, '/agents', { email: 'alice@example.com', name: 'Shopping agent' });
    const { rows: owners } = await server.services.db.query<{ id: string }>(`SELECT id FROM users WHERE email = 'alice@example.com'`);
    const aliceId = owners[0].id;
    await server.services.store.ownerAgents.update(aliceId, shopper.agent_id, { approval_policy: 'always' });
    const authorizeQuery = new URLSearchParams({
      client_id: shop.client_id,
      redirect_uri: shop.redirect_uris[0],
      response_type: 'code',
      state: 'x',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    });
    const authorize = async (page: Page, query = authorizeQuery) => {
      await page.goto(`${server.url}/authorize?${query}`);
      return (await page.locator('meta[name="request-id"]').getAttribute('content'))!;
    };
    // A person's MCP app (registered by itself, RFC 7591) signing in to an MCP server: the owner path.
    const notes = await (
      await fetch(`${server.url}/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'Notes desktop', redirect_uris: ['http://127.0.0.1/callback'] }),
      })
    ).json();
    await admin(server, '/resources', { resource: 'https://notes.example.com/mcp', name: 'Team notes', scopes: ['notes:read', 'email'] });
    const appQuery = new URLSearchParams({
      ...Object.fromEntries(authorizeQuery),
      client_id: notes.client_id,
      redirect_uri: 'http://127.0.0.1:53682/callback',
      resource: 'https://notes.example.com/mcp',
    });
    const ownerPath = async (page: Page) => {
      await authorize(page, appQuery);
      await page.getByRole('button', { name: 'Sign in as the owner' }).click();
    };
    const consoleSignIn = async (page: Page) => {
      await page.goto(`${server.adminUrl}/console/sign-in`);
      await page.getByLabel('Admin token').fill(ADMIN_TOKEN);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Overview' }).waitFor();
    };

    // The owner's portal as alice: a session as her mailed link would start it (no mail server here).
    const ownerSignIn = async (page: Page) => {
      const { secret, hash } = newSessionSecret();
      await server.services.store.ownerSessions.start(aliceId, { sessionHash: hash, method: 'email_link', lifetimes: SESSION_LIFETIMES });
      await page.context().addCookies([{ name: sessionCookie(server.services.config).name, value: secret, url: server.url }]);
    };

    // Each state: how to reach it in a fresh browser.
    const states: Record<string, (page: Page) => Promise<void>> = {
      waiting: async (page) => void (await authorize(page)),
      approval: async (page) => {
        await agentAuthenticates(await authorize(page));
        await page.getByRole('button', { name: 'Approve' }).waitFor({ timeout: 15_000 });
      },
      error: async (page) => {
        // Started outside this page, so that its own polling cannot race the visit below.
        const started = await fetch(`${server.url}/authorize?${authorizeQuery}`);
        const requestId = /<meta name="request-id" content="([^"]+)">/.exec(await started.text())![1];
        await server.services.db.query(`UPDATE auth_requests SET expires_at = now() - interval '1 second' WHERE id = $1`, [requestId]);
        await page.goto(`${server.url}/authorize/complete?request_id=${requestId}`);
      },
      'owner-approval-waiting': async (page) => {
        await agentAuthenticates(await authorize(page), shopper);
        await page.locator('#match-code').waitFor({ timeout: 15_000 });
      },
      'owner-approvals': async (page) => {
        // One sign-in waiting: those of earlier shots are out of the list.
        await server.services.db.query(`UPDATE auth_requests SET expires_at = now() - interval '1 second' WHERE agent_id = $1`, [shopper.agent_id]);
        const started = await fetch(`${server.url}/authorize?${authorizeQuery}`);
        await agentAuthenticates(/<meta name="request-id" content="([^"]+)">/.exec(await started.text())![1], shopper);
        await ownerSignIn(page);
        await page.goto(`${server.url}/account/approvals`);
        await page.locator('.match-code').waitFor();
      },
      'owner-path-waiting': async (page) => void (await authorize(page, appQuery)),
      'owner-path-sign-in': async (page) => {
        await ownerPath(page);
        await page.getByRole('button', { name: 'Sign in with a passkey' }).waitFor();
      },
      'owner-path-check-mail': async (page) => {
        await ownerPath(page);
        await page.getByLabel('Your email address').fill('alice@example.com');
        await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
        await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
      },
      'owner-path-consent': async (page) => {
        await ownerSignIn(page);
        await ownerPath(page);
        await page.getByRole('button', { name: 'Allow' }).waitFor();
      },
      'portal-sign-in': async (page) => void (await page.goto(`${server.url}/account`)),
      'portal-passkeys': async (page) => {
        await ownerSignIn(page);
        await page.goto(`${server.url}/account/passkeys`);
      },
      'portal-settings': async (page) => {
        await ownerSignIn(page);
        await page.goto(`${server.url}/account/settings`);
      },
      'portal-agents': async (page) => {
        await ownerSignIn(page);
        await page.goto(`${server.url}/account`);
      },
      'portal-agent': async (page) => {
        await ownerSignIn(page);
        await page.goto(`${server.url}/account/agents/${research.agent_id}`);
      },
      'portal-history': async (page) => {
        await ownerSignIn(page);
        await page.goto(`${server.url}/account/history?limit=12`);
      },
      'console-sign-in': async (page) => void (await page.goto(`${server.adminUrl}/console/sign-in`)),
      'console-overview': consoleSignIn,
      'console-website': async (page) => {
        await consoleSignIn(page);
        await page.goto(`${server.adminUrl}/console/websites/${shop.client_id}`);
        await page.getByRole('button', { name: 'Rotate secret' }).click();
        await page.locator('#new-secret').waitFor();
      },
      'console-agent': async (page) => {
        await consoleSignIn(page);
        await page.goto(`${server.adminUrl}/console/agents/${research.agent_id}`);
      },
      'console-user': async (page) => {
        await consoleSignIn(page);
        await page.goto(`${server.adminUrl}/console/users?email=alice%40example.com`);
      },
      'console-audit': async (page) => {
        await consoleSignIn(page);
        await page.goto(`${server.adminUrl}/console/audit?limit=12`);
      },
    };

    mkdirSync(OUT, { recursive: true });
    // `npm run screenshots -- portal-agent console-agent`: only those states; none named, every state.
    const only = process.argv.slice(2);
    for (const [state, reach] of Object.entries(states).filter(([name]) => only.length === 0 || only.includes(name))) {
      for (const [width, viewport] of Object.entries(VIEWPORTS)) {
        for (const colorScheme of SCHEMES) {
          const context = await browser.newContext({ viewport, colorScheme, timezoneId: 'Europe/Amsterdam', locale: 'en-GB' });
          const page = await context.newPage();
          await reach(page);
          const file = `${OUT}${state}-${width}-${colorScheme}.png`;
          await page.screenshot({ path: file, fullPage: true, animations: 'disabled' });
          process.stdout.write(`${file}\n`);
          await context.close();
        }
      }
    }
  } finally {
    await browser.close();
    await server.close();
  }
}

main().catch((err) => {
  process.stderr.write(`screenshots: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
