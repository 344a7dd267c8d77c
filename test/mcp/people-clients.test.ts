import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { launchChromium } from '../../examples/agent/agent.js';
import { type RunningMcpExample, startMcpExample } from '../../examples/mcp-server/server.js';
import { expectAxeCleanEverywhere } from '../helpers/axe.js';
import { describeInChromium, withVirtualAuthenticator } from '../helpers/chromium.js';
import { storeName } from '../helpers/database.js';
import { startDocumentServer } from '../helpers/https-documents.js';
import { startPortalServer } from '../helpers/owner.js';
import type { TestServer } from '../helpers/server.js';
import { linkIn, startSmtp, type TestSmtp } from '../helpers/smtp.js';

const describe = describeInChromium('people’s MCP clients in a real browser');

/** Resource tokens live this long here, so that a revocation shows within the test. */
const TOKEN_TTL_SECONDS = 3;
/** The website kit's default leeway on `exp`. */
const CLOCK_TOLERANCE_SECONDS = 5;

/** The loopback callback of a native app (RFC 8252 §7.3): it waits for the browser to come back with the code. */
async function loopbackCallback() {
  let arrived: (params: URLSearchParams) => void = () => {};
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (url.pathname !== '/callback') return void res.writeHead(404).end();
    arrived(url.searchParams);
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end('<!doctype html><link rel="icon" href="data:,"><title>Signed in</title><p>You can close this window.</p>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    /** The query of the next visit. */
    next: () => new Promise<URLSearchParams>((resolve) => (arrived = resolve)),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
type Callback = Awaited<ReturnType<typeof loopbackCallback>>;

/**
 * What a person's MCP app (an editor, a desktop assistant) gives the official SDK: an
 * OAuthClientProvider that opens the authorization URL in the system browser (here Chromium) and
 * keeps what the SDK hands it. With `clientMetadataUrl` it names itself by that document; without,
 * the SDK registers it (RFC 7591).
 */
class PersonsAppProvider implements OAuthClientProvider {
  private information?: OAuthClientInformationMixed;
  private saved?: OAuthTokens;
  private verifier = '';

  constructor(
    private readonly page: Page,
    private readonly callback: Callback,
    readonly clientMetadataUrl?: string,
  ) {}

  get redirectUrl() {
    return this.callback.url;
  }
  // agent-auth requires state (RFC 6749 §10.12); the SDK sends one when its provider makes it.
  state() {
    return randomBytes(16).toString('base64url');
  }
  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'Notes desktop', redirect_uris: [this.callback.url], token_endpoint_auth_method: 'none' };
  }
  clientInformation() {
    return this.information;
  }
  saveClientInformation(information: OAuthClientInformationMixed) {
    this.information = information;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  async redirectToAuthorization(url: URL) {
    await this.page.goto(url.href);
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
  // What the SDK calls when the server refused them (a refresh token of a revoked grant, say).
  invalidateCredentials(scope: 'all' | 'client' | 'tokens' | 'verifier' | 'discovery') {
    if (scope === 'all' || scope === 'tokens') this.saved = undefined;
    if (scope === 'all' || scope === 'client') this.information = undefined;
  }
}

describe(`a person's MCP client signs in through the owner, in Chromium (${storeName})`, { timeout: 120_000 }, () => {
  let browser: Browser;
  let smtp: TestSmtp;
  let server: TestServer;
  let issuer: string;
  let mcp: RunningMcpExample;
  let documents: Awaited<ReturnType<typeof startDocumentServer>>;

  beforeAll(async () => {
    browser = await launchChromium();
    smtp = await startSmtp();
    ({ server, issuer } = await startPortalServer(smtp, {
      RESOURCE_ACCESS_TOKEN_TTL_SECONDS: String(TOKEN_TTL_SECONDS),
      RATE_LIMIT_EMAIL_LINK_PER_IP: '1000',
    }));
    mcp = await startMcpExample({ issuer });
    expect((await server.adminCall('POST', '/admin/resources', { resource: mcp.url, name: 'Team notes', scopes: ['email'] })).statusCode).toBe(201);
    // The app's Client ID Metadata Document, over https with the test's CA, which agent-auth trusts.
    documents = await startDocumentServer();
    server.services.clientDocuments.ca = documents.ca;
  });
  // Each test's MCP clients and browser, closed even when it fails (an open one would hold the servers' close).
  const opened: { close(): Promise<unknown> }[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((o) => o.close().catch(() => {})));
  });
  afterAll(async () => {
    await documents?.close();
    await mcp?.close();
    await server?.close();
    await smtp?.close();
    await browser?.close();
  });

  /** A browser page of its own, its errors collected (a test ends expecting none), with a virtual platform authenticator. */
  async function newPage(): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    opened.push(context);
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(`uncaught: ${err.message}`));
    page.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(msg.text());
    });
    await withVirtualAuthenticator(context, page);
    return { context, page, problems };
  }

  async function useMailedLink(page: Page, email: string) {
    await page.goto(linkIn(await smtp.next(email, 5000, (m) => m.subject.includes('sign-in link'))));
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  /** An owner with a passkey in this page's authenticator, signed out again: the passkey is all they bring. */
  async function ownerWithPasskey(context: BrowserContext, page: Page, email: string) {
    await server.createAgent(email);
    await page.goto(`${issuer}/account`);
    await page.getByLabel('Your email address').fill(email);
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await useMailedLink(page, email);
    await page.waitForURL(`${issuer}/account`);
    await page.goto(`${issuer}/account/passkeys`);
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.locator('.passkey-name').first().waitFor();
    await context.clearCookies();
  }

  /**
   * The official SDK's client connects: the 401 makes it open the authorization URL in the browser,
   * `inBrowser` is what the person does there, the browser comes back to the loopback callback with
   * the code, and the SDK exchanges it and connects again.
   */
  async function connect(provider: PersonsAppProvider, callback: Callback, inBrowser: () => Promise<void>) {
    const client = new Client({ name: 'notes desktop', version: '1.0.0' });
    opened.push(client);
    const first = new StreamableHTTPClientTransport(new URL(mcp.url), { authProvider: provider });
    const back = callback.next();
    await expect(client.connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    await inBrowser();
    const params = await back;
    expect(params.get('iss')).toBe(issuer);
    await first.finishAuth(params.get('code')!);
    await client.connect(new StreamableHTTPClientTransport(new URL(mcp.url), { authProvider: provider }));
    return client;
  }

  async function whoami(client: Client) {
    const result = await client.callTool({ name: 'whoami' });
    return JSON.parse((result.content as { text: string }[])[0].text) as { agent_id: string; owner_email: string; client_id: string };
  }

  /** The owner's agents, read through the portal's API in this browser (its session). */
  async function agentsIn(page: Page) {
    const res = await page.request.get(`${issuer}/account/api/agents`);
    expect(res.status()).toBe(200);
    return ((await res.json()) as { agents: { agent_id: string; name: string; kind: string; client_id: string | null; websites: unknown[] }[] })
      .agents;
  }

  it('by Client ID Metadata Document with a passkey: one pass through the browser, and the tool answers as the owner’s new agent', async () => {
    const email = `owner-${randomBytes(4).toString('hex')}@example.com`;
    const { context, page, problems } = await newPage();
    await ownerWithPasskey(context, page, email);
    const callback = await loopbackCallback();
    opened.push(callback);
    const documentUrl = `${documents.origin}/notes-desktop.json`;
    documents.serve('/notes-desktop.json', {
      headers: { 'cache-control': 'max-age=60' },
      body: {
        client_id: documentUrl,
        client_name: 'Notes desktop',
        redirect_uris: ['http://127.0.0.1/callback'],
        token_endpoint_auth_method: 'none',
      },
    });
    const provider = new PersonsAppProvider(page, callback, documentUrl);
    const client = await connect(provider, callback, async () => {
      await page.getByRole('button', { name: 'Sign in as the owner' }).waitFor();
      expect(await page.locator('#client-id-host').textContent()).toBe(new URL(documents.origin).host);
      expect(await page.locator('#resource-name').textContent()).toBe('Team notes');
      await expectAxeCleanEverywhere(page, 'owner-path-waiting');
      await page.getByRole('button', { name: 'Sign in as the owner' }).click();
      await page.getByRole('button', { name: 'Sign in with a passkey' }).waitFor();
      await expectAxeCleanEverywhere(page, 'owner-path-sign-in');
      await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
      await page.getByRole('button', { name: 'Allow' }).waitFor();
      expect(await page.locator('h1').textContent()).toBe(`Let Notes desktop (${new URL(documents.origin).host}) act as your agent at Team notes?`);
      await expectAxeCleanEverywhere(page, 'owner-path-consent');
      await page.getByLabel('Name of the agent').fill('Notes on my laptop');
      await page.getByRole('button', { name: 'Allow' }).click();
    });
    const who = await whoami(client);
    expect(who).toMatchObject({ owner_email: email, client_id: documentUrl });
    const [made] = (await agentsIn(page)).filter((a) => a.kind === 'client');
    expect(made).toMatchObject({ agent_id: who.agent_id, name: 'Notes on my laptop', client_id: documentUrl });
    await page.goto(`${issuer}/account`);
    await page.getByText('Notes on my laptop').first().waitFor();
    expect(problems).toEqual([]);
  });

  it('by dynamic registration with an email link through SMTP; the next sign-in asks nothing; revoking the agent fails the next tool call', async () => {
    const email = `owner-${randomBytes(4).toString('hex')}@example.com`;
    await server.createAgent(email);
    const { page, problems } = await newPage();
    const callback = await loopbackCallback();
    opened.push(callback);
    const provider = new PersonsAppProvider(page, callback);
    const client = await connect(provider, callback, async () => {
      await page.getByRole('button', { name: 'Sign in as the owner' }).click();
      await page.getByLabel('Your email address').fill(email);
      await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
      await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
      await expectAxeCleanEverywhere(page, 'owner-path-check-mail');
      await page.goto(linkIn(await smtp.next(email, 5000, (m) => m.subject.includes('sign-in link'))));
      await page.getByRole('button', { name: 'Sign in' }).waitFor();
      await expectAxeCleanEverywhere(page, 'owner-path-link');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('button', { name: 'Allow' }).click();
    });
    const registered = (await provider.clientInformation())!;
    const who = await whoami(client);
    expect(who).toMatchObject({ owner_email: email, client_id: registered.client_id });
    const [made] = (await agentsIn(page)).filter((a) => a.kind === 'client');
    expect(made).toMatchObject({ agent_id: who.agent_id, name: 'Notes desktop', client_id: registered.client_id });

    // The same app again (its tokens forgotten): the owner is signed in and the agent exists, so no question.
    const again = new PersonsAppProvider(page, callback);
    again.saveClientInformation(registered);
    const second = await connect(again, callback, async () => {
      await page.getByRole('button', { name: 'Sign in as the owner' }).click();
    });
    expect((await whoami(second)).agent_id).toBe(who.agent_id);

    // The owner deletes the agent in the portal: the resource refuses its token once it expires, and the refresh is refused at once.
    const deleted = await page.request.delete(`${issuer}/account/api/agents/${made.agent_id}`, {
      headers: { 'content-type': 'application/json', origin: issuer },
    });
    expect(deleted.status()).toBe(204);
    const { access_token } = (await again.tokens())!;
    const introspected = await fetch(`${issuer}/introspect`, {
      method: 'POST',
      body: new URLSearchParams({ token: access_token, client_id: registered.client_id }),
    });
    expect(await introspected.json()).toEqual({ active: false });
    await expect
      .poll(async () => (await fetch(mcp.url, { method: 'POST', headers: { authorization: `Bearer ${access_token}` } })).status, {
        timeout: (TOKEN_TTL_SECONDS + CLOCK_TOLERANCE_SECONDS + 5) * 1000,
        interval: 250,
      })
      .toBe(401);
    await expect(second.callTool({ name: 'whoami' })).rejects.toBeInstanceOf(UnauthorizedError);
    expect(problems).toEqual([]);
  });
});
