import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { postForm } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { checkStatus, startAuthorize } from '../helpers/flow.js';
import { closeServerWithMail, cookiesOf, serverWithMail, signInOwner, startServerWithMail } from '../helpers/owner.js';
import { ISSUER, type TestServer } from '../helpers/server.js';
import { linkIn, type TestSmtp } from '../helpers/smtp.js';

type Injected = Awaited<ReturnType<TestServer['app']['inject']>>;
const CALLBACK = 'http://127.0.0.1:4567/callback';
const newEmail = () => `owner-${randomBytes(4).toString('hex')}@example.com`;
const csrfOf = (res: Injected) => /name="csrf_token" value="([^"]+)"/.exec(res.body)?.[1] ?? '';
const joinCookies = (...cookies: (string | undefined)[]) => cookies.filter(Boolean).join('; ');

/** The code exchange of a public client (`none`): its client_id alone, and the PKCE verifier. */
const exchangeCode = (server: TestServer, client: { client_id: string; redirect_uris: string[] }, code: string, verifier: string) =>
  postForm(server, '/token', {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    redirect_uri: client.redirect_uris[0],
    client_id: client.client_id,
  });

/** A person's MCP client, registered by itself (RFC 7591): public, loopback redirect. */
async function registerClient(server: TestServer, name = 'Notes app') {
  const res = await server.app.inject({
    method: 'POST',
    url: '/register',
    payload: { client_name: name, redirect_uris: ['http://127.0.0.1/callback'] },
  });
  expect(res.statusCode).toBe(201);
  return { client_id: res.json().client_id as string, redirect_uris: [CALLBACK] };
}

/** The same browser through the owner path: the sign-in's binding cookie plus, once signed in, the owner's session. */
async function ownerBrowser(server: TestServer, client: { client_id: string; redirect_uris: string[] }, overrides: Record<string, string> = {}) {
  const started = await startAuthorize(server, client, overrides);
  expect(started.res.statusCode).toBe(200);
  let session = '';
  const cookie = () => joinCookies(started.cookie, session);
  const path = `/authorize/owner?request_id=${encodeURIComponent(started.requestId)}`;
  return {
    ...started,
    setSession: (value: string) => void (session = value),
    session: () => session,
    page: () => server.app.inject({ url: path, headers: { cookie: cookie() } }),
    post: (url: string, form: Record<string, string>, headers: Record<string, string> = {}) =>
      server.app.inject({
        method: 'POST',
        url,
        headers: { cookie: cookie(), origin: ISSUER, 'content-type': 'application/x-www-form-urlencoded', ...headers },
        payload: new URLSearchParams({ request_id: started.requestId, ...form }).toString(),
      }),
  };
}

/** The owner path by email link, in this browser, up to the question; returns the page that asks. */
async function signInByLink(server: TestServer, smtp: TestSmtp, browser: Awaited<ReturnType<typeof ownerBrowser>>, email: string) {
  const signInPage = await browser.page();
  expect(signInPage.statusCode).toBe(200);
  const asked = await browser.post('/authorize/owner/email-link', { csrf_token: csrfOf(signInPage), email });
  expect(asked.statusCode).toBe(200);
  expect(asked.body).toContain('Check your mail');
  const link = new URL(linkIn(await smtp.next(email, 5000, (m) => m.subject.includes('sign-in link'))));
  expect(link.pathname).toBe('/authorize/owner/email-link');
  expect(link.searchParams.get('request_id')).toBe(browser.requestId);
  const linkPage = await server.app.inject({ url: `${link.pathname}${link.search}`, headers: { cookie: browser.cookie! } });
  expect(linkPage.statusCode).toBe(200);
  const used = await browser.post('/authorize/owner/email-link/use', { csrf_token: csrfOf(linkPage), token: link.searchParams.get('token')! });
  expect(used.statusCode).toBe(303);
  expect(used.headers.location).toBe(`/authorize/owner?request_id=${browser.requestId}`);
  browser.setSession(cookiesOf(used));
  return browser.page();
}

describe(`the owner path of the authorization page (${storeName})`, () => {
  const started = serverWithMail();

  /** A new owner's sign-in, by email link, up to the question. */
  async function askedByLink() {
    const { server, smtp } = started;
    const email = newEmail();
    const browser = await ownerBrowser(server, await registerClient(server));
    return { server, smtp, email, browser, question: await signInByLink(server, smtp, browser, email) };
  }

  it('offers "Sign in as the owner" to public clients and flagged websites only', async () => {
    const { server } = started;
    const button = /<button class="primary" type="submit">Sign in as the owner<\/button>/;
    expect((await startAuthorize(server, await registerClient(server))).res.body).toMatch(button);
    const website = await server.createClient();
    const plain = await startAuthorize(server, website);
    expect(plain.res.body).not.toMatch(button);
    const refused = await server.app.inject({ url: `/authorize/owner?request_id=${plain.requestId}`, headers: { cookie: plain.cookie! } });
    expect(refused.statusCode).toBe(400);
    expect(refused.body).toContain('his app does not offer signing in as the owner');
    expect((await server.adminCall('PATCH', `/admin/clients/${website.client_id}`, { owner_sign_in: true })).json.owner_sign_in).toBe(true);
    expect((await startAuthorize(server, website)).res.body).toMatch(button);
    // A sign-in that names its agent is that agent's.
    const agent = await server.createAgent();
    expect((await startAuthorize(server, website, { login_hint: agent.agent_id })).res.body).not.toMatch(button);
  });

  it('by email link: the owner allows, the client gets a code for a new agent of theirs, listed as kind "client"; the next sign-in asks nothing', async () => {
    const { server, smtp } = started;
    const email = newEmail();
    await server.createAgent(email);
    const client = await registerClient(server);
    const browser = await ownerBrowser(server, client);
    const question = await signInByLink(server, smtp, browser, email);
    expect(question.statusCode).toBe(200);
    expect(question.body).toContain('Notes app</strong> act as your agent');
    expect(question.body).toMatch(/value="allow">Allow<\/button>/);
    expect(question.body).toMatch(/value="deny">Deny<\/button>/);

    const allowed = await browser.post('/authorize/owner/decision', { csrf_token: csrfOf(question), decision: 'allow', agent_name: 'My notes' });
    expect(allowed.statusCode).toBe(303);
    const location = new URL(allowed.headers.location as string);
    expect(`${location.origin}${location.pathname}`).toBe(CALLBACK);
    expect(location.searchParams.get('state')).toBe(browser.state);
    expect(location.searchParams.get('iss')).toBe(ISSUER);
    const tokens = await exchangeCode(server, client, location.searchParams.get('code')!, browser.verifier);
    expect(tokens.statusCode).toBe(200);
    // The owner hears of the first sign-in, as of any agent's at a new website.
    expect((await smtp.next(email, 5000, (m) => m.subject === 'My notes signed in to Notes app')).text).toContain('Notes app');

    const owner = await signInOwner(server.app, smtp, email);
    const agents = (await owner.call('GET', '/account/api/agents')).json().agents;
    const made = agents.find((a: { kind: string }) => a.kind === 'client');
    expect(made).toMatchObject({ name: 'My notes', client_id: client.client_id, active: true, approval_policy: null });
    expect(agents.filter((a: { kind: string }) => a.kind === 'agent')).toHaveLength(1);
    expect(made.websites.map((w: { client_id: string }) => w.client_id)).toEqual([client.client_id]);
    const introspected = await server.app.inject({
      method: 'POST',
      url: '/introspect',
      payload: { token: tokens.json().access_token, client_id: client.client_id },
    });
    expect(introspected.json()).toMatchObject({ active: true, sub: made.agent_id, client_id: client.client_id });

    const audit = (await server.adminCall('GET', `/admin/audit?agent_id=${made.agent_id}&actor=owner`)).json.events.map(
      (e: { event: string }) => e.event,
    );
    expect(audit).toEqual(expect.arrayContaining(['agent_created', 'client_sign_in_allowed']));

    // Again, within the freshness window: no question, the same agent, straight back to the client.
    const again = await ownerBrowser(server, client);
    again.setSession(owner.cookie);
    const passed = await again.page();
    expect(passed.statusCode).toBe(303);
    const code = new URL(passed.headers.location as string).searchParams.get('code')!;
    const second = await exchangeCode(server, client, code, again.verifier);
    const introspect = async (token: string) =>
      (await server.app.inject({ method: 'POST', url: '/introspect', payload: { token, client_id: client.client_id } })).json();
    expect((await introspect(second.json().access_token)).sub).toBe(made.agent_id);

    // The owner's kill switch ends the client's tokens at once, as any agent's.
    expect((await owner.call('POST', '/account/api/revoke-all')).statusCode).toBe(204);
    expect(await introspect(second.json().access_token)).toEqual({ active: false });
    expect(
      (await postForm(server, '/token', { grant_type: 'refresh_token', refresh_token: second.json().refresh_token, client_id: client.client_id }))
        .statusCode,
    ).toBe(400);
  });

  it('Deny sends the client access_denied, and the sign-in ends', async () => {
    const { server, smtp, email, browser, question } = await askedByLink();
    const denied = await browser.post('/authorize/owner/decision', { csrf_token: csrfOf(question), decision: 'deny' });
    expect(denied.statusCode).toBe(303);
    const location = new URL(denied.headers.location as string);
    expect(location.searchParams.get('error')).toBe('access_denied');
    expect(location.searchParams.get('state')).toBe(browser.state);
    expect((await checkStatus(server, browser.requestId)).json()).toMatchObject({ status: 'error', error: 'access_denied' });
    const owner = await signInOwner(server.app, smtp, email);
    expect((await owner.call('GET', '/account/api/agents')).json().agents).toEqual([]);
    const history = (await owner.call('GET', '/account/api/history')).json().events.map((e: { event: string }) => e.event);
    expect(history).toContain('client_sign_in_denied');
  });

  it('refuses another browser, a foreign origin, a missing form token and a stale owner session', async () => {
    const { server, browser, question } = await askedByLink();
    const csrf = csrfOf(question);

    // Another browser (no binding cookie) holding the owner's session still gets nowhere.
    const elsewhere = await server.app.inject({ url: `/authorize/owner?request_id=${browser.requestId}`, headers: { cookie: browser.session() } });
    expect(elsewhere.statusCode).toBe(400);
    expect(elsewhere.body).toContain('was started in another browser');
    expect(
      (await browser.post('/authorize/owner/decision', { csrf_token: csrf, decision: 'allow' }, { origin: 'https://evil.example' })).statusCode,
    ).toBe(403);
    expect((await browser.post('/authorize/owner/decision', { csrf_token: 'x'.repeat(64), decision: 'allow' })).statusCode).toBe(400);
    const crossSite = await browser.post('/authorize/owner/decision', { csrf_token: csrf, decision: 'allow' }, { 'sec-fetch-site': 'cross-site' });
    expect(crossSite.statusCode).toBe(403);

    // Past OWNER_FRESH_SECONDS: the page asks the owner to sign in again, and Allow is refused.
    await server.services.db.query(`UPDATE owner_sessions SET authenticated_at = now() - interval '301 seconds'`);
    const stale = await browser.page();
    expect(stale.statusCode).toBe(200);
    expect(stale.body).toContain('Sign in with a passkey');
    const refused = await browser.post('/authorize/owner/decision', { csrf_token: csrf, decision: 'allow' });
    expect(refused.statusCode).toBe(403);
    expect(refused.body).toContain('fresh_authentication_required');
    expect((await checkStatus(server, browser.requestId)).json()).toEqual({ status: 'pending' });
  });

  it('opens the mailed link only in the browser of the sign-in, and spends nothing elsewhere', async () => {
    const { server, smtp } = started;
    const email = newEmail();
    const client = await registerClient(server);
    const browser = await ownerBrowser(server, client);
    const page = await browser.page();
    await browser.post('/authorize/owner/email-link', { csrf_token: csrfOf(page), email });
    const link = new URL(linkIn(await smtp.next(email, 5000, (m) => m.subject.includes('sign-in link'))));
    const other = await server.app.inject({ url: `${link.pathname}${link.search}` });
    expect(other.statusCode).toBe(400);
    expect((await server.app.inject({ url: `${link.pathname}${link.search}`, headers: { cookie: browser.cookie! } })).statusCode).toBe(200);
  });
});

describe(`the owner path without sign-up (${storeName})`, () => {
  it('mails no link to an address nobody owns, answers the same, and limits the links asked for per address', async () => {
    const { server, smtp } = await startServerWithMail({ OWNER_SIGNUP: 'false', RATE_LIMIT_EMAIL_LINK_PER_IP: '2' });
    try {
      const client = await registerClient(server);
      const known = newEmail();
      await server.createAgent(known);
      const answers: string[] = [];
      for (const email of [newEmail(), known]) {
        const browser = await ownerBrowser(server, client);
        const asked = await browser.post('/authorize/owner/email-link', { csrf_token: csrfOf(await browser.page()), email });
        expect(asked.statusCode).toBe(200);
        answers.push(
          asked.body
            .replace(email, '…')
            .replace(/req_[\w-]+/g, 'req')
            .replace(/nonce="[^"]+"/g, '')
            .replace(/datetime="[^"]+"|\d\d:\d\d UTC/g, ''),
        );
      }
      expect(answers[0]).toBe(answers[1]);
      await smtp.next(known, 5000);
      expect(smtp.received.map((m) => m.to)).toEqual([known]);
      // The portal's budget of links per address holds here too.
      const third = await ownerBrowser(server, client);
      const limited = await third.post('/authorize/owner/email-link', { csrf_token: csrfOf(await third.page()), email: known });
      expect(limited.statusCode).toBe(429);
      expect(limited.headers['retry-after']).toBeDefined();
    } finally {
      await closeServerWithMail({ smtp, server });
    }
  });
});
