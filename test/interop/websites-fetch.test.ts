import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RunningFetchWebsite, startFetchWebsite } from '../../examples/fetch-website/server.js';
import { AgentAuthClient, findRequestId } from '../../src/agent/index.js';
import { storeName } from '../helpers/database.js';
import { freePort, type ListeningServer, startListeningServer } from '../helpers/listening.js';
import { CookieJar } from '../helpers/sign-in.js';

/** A browser made of fetch: one cookie jar per origin, redirects followed by hand. */
function browser() {
  const jars = new Map<string, CookieJar>();
  function get(url: string) {
    const { origin } = new URL(url);
    const jar = jars.get(origin) ?? new CookieJar();
    jars.set(origin, jar);
    return jar.fetch(url);
  }
  /** Follows redirects until a page; returns it and where it is. */
  async function open(url: string): Promise<{ url: string; html: string }> {
    for (let hops = 0; hops < 10; hops++) {
      const res = await get(url);
      const location = res.headers.get('location');
      if (!location) return { url, html: await res.text() };
      url = new URL(location, url).href;
    }
    throw new Error('too many redirects');
  }
  return { get, open };
}

describe(`examples/fetch-website: sign-in with plain fetch (${storeName})`, () => {
  let server: ListeningServer;
  let website: RunningFetchWebsite;
  let agent: AgentAuthClient;
  let agentId: string;

  beforeAll(async () => {
    server = await startListeningServer();
    const port = await freePort();
    const client = await server.createClient([`http://127.0.0.1:${port}/callback`]);
    website = await startFetchWebsite({ issuer: server.issuer, clientId: client.client_id, clientSecret: client.client_secret, port });
    const created = await server.createAgent('fetch-user@example.com');
    agentId = created.agent_id;
    agent = new AgentAuthClient({ baseUrl: server.issuer, agentId, agentSecret: created.agent_secret, model: 'test-model' });
  });
  afterAll(async () => {
    await website?.close();
    await server?.close();
  });

  it('offers the button with the stylesheet agent-auth serves', async () => {
    const { html } = await browser().open(website.url);
    expect(html).toContain(`<link rel="stylesheet" href="${server.issuer}/assets/sign-in-with-agent.css">`);
    // The documented button: its mark (an inline SVG), then its words.
    expect(html).toMatch(
      /<a class="sign-in-with-agent" href="\/login"><svg [^>]*aria-hidden="true"[^>]*>.*<\/svg><span>Sign in with agent<\/span><\/a>/s,
    );
  });

  it('signs the agent in: PKCE, state, code for tokens, userinfo; the agent id is the account key', async () => {
    const person = browser();
    const authorization = await person.open(`${website.url}/login`);
    expect(new URL(authorization.url).origin).toBe(server.issuer);
    const requestId = findRequestId(authorization.html)!;
    const authenticated = await agent.authenticate(requestId);
    expect(authenticated).toMatchObject({ redirect_origin: website.url });

    const landed = await person.open(`${server.issuer}/authorize/complete?request_id=${requestId}`);
    expect(landed.url).toBe(`${website.url}/`);
    expect(landed.html).toContain('Signed in as <strong id="email">fetch-user@example.com</strong>');
    expect(landed.html).toContain(`<code id="sub">${agentId}</code>`);
  });

  it('refuses a callback whose state is not the one it sent, and redeems nothing', async () => {
    const person = browser();
    const requestId = findRequestId((await person.open(`${website.url}/login`)).html)!;
    await agent.authenticate(requestId);
    const complete = await person.get(`${server.issuer}/authorize/complete?request_id=${requestId}`);
    const callback = new URL(complete.headers.get('location')!);
    expect(callback.searchParams.get('code')).toBeTruthy();
    callback.searchParams.set('state', 'forged');
    const landed = await person.open(callback.href);
    expect(landed.html).toContain('Sign-in failed: state mismatch');
    expect(landed.html).not.toContain('Signed in as');
  });
});
