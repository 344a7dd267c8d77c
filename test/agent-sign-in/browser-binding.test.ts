import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, bindingCookie, completeInBrowser, startAuthorize } from '../helpers/flow.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// The cookie that binds a sign-in to the browser that opened it (docs/security.md).
describe(`the browser binding cookie (${storeName})`, () => {
  let server: TestServer;
  let secureServer: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
    secureServer = await startTestServer({ ISSUER: 'https://auth.example', AUTH_REQUEST_TTL_SECONDS: '300' });
  });
  afterAll(async () => {
    await server.close();
    await secureServer.close();
  });

  async function authenticate(s: TestServer, requestId: string) {
    const agent = await s.createAgent();
    const res = await agentAuthenticate(s, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    expect(res.statusCode).toBe(200);
  }

  it('never adopts a value planted in the browser: the attacker holding it gets no code, the victim does', async () => {
    const client = await server.createClient();
    const planted = randomBytes(32).toString('base64url');
    // The victim's browser carries a value the attacker planted (a sibling subdomain, a plain-http page).
    const victim = await startAuthorize(server, client, {}, `agent_auth_browser=${planted}`);
    const minted = bindingCookie(victim.res, victim.requestId)!;
    expect(minted.value).not.toBe(planted);
    for (const c of victim.res.cookies) expect(c.value).not.toBe(planted);
    await authenticate(server, victim.requestId);

    // The attacker read the request id (it is on screen) and presents the planted value under every name.
    const attacker = await completeInBrowser(server, victim.requestId, `agent_auth_browser=${planted}; ${minted.name}=${planted}`);
    expect(attacker.code).toBeUndefined();
    expect(attacker.res.statusCode).toBe(400);
    expect(attacker.res.body).toContain('another browser');

    const done = await completeInBrowser(server, victim.requestId, victim.cookie);
    expect(done.code).toBeTruthy();
  });

  it('with an https issuer: __Host- prefixed, Secure, Path=/, no Domain, lives as long as the request, dropped once used', async () => {
    const client = await secureServer.createClient();
    const started = await startAuthorize(secureServer, client);
    const cookie = bindingCookie(started.res, started.requestId)!;
    expect(cookie.name).toBe(`__Host-agent_auth_${started.requestId}`);
    expect(cookie).toMatchObject({ secure: true, httpOnly: true, sameSite: 'Lax', path: '/', maxAge: 300 });
    expect(cookie.domain).toBeUndefined();
    // Small: one sign-in's cookie rides along on every path of the issuer while it lasts.
    expect(`${cookie.name}=${cookie.value}`.length).toBeLessThan(100);

    await authenticate(secureServer, started.requestId);
    const done = await completeInBrowser(secureServer, started.requestId, started.cookie);
    expect(done.code).toBeTruthy();
    const cleared = done.res.cookies.find((c) => c.name === cookie.name)!;
    expect(cleared).toMatchObject({ value: '', path: '/', secure: true });
    expect(cleared.expires!.getTime()).toBeLessThan(Date.now());
  });

  it('with an http localhost issuer: no prefix, kept to /authorize, and the sign-in completes', async () => {
    const client = await server.createClient(['http://localhost:8080/cb']);
    const started = await startAuthorize(server, client);
    const cookie = bindingCookie(started.res, started.requestId)!;
    expect(cookie.name).toBe(`agent_auth_${started.requestId}`);
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', path: '/authorize' });
    expect(cookie.secure).toBeFalsy();
    await authenticate(server, started.requestId);
    expect((await completeInBrowser(server, started.requestId, started.cookie)).code).toBeTruthy();
  });

  it('a cookie of one sign-in does not complete another sign-in of the same browser', async () => {
    const client = await server.createClient();
    const first = await startAuthorize(server, client);
    const second = await startAuthorize(server, client, {}, first.cookie);
    await authenticate(server, second.requestId);
    // Only the first sign-in's cookie, under the second one's name.
    const borrowed = `${bindingCookie(second.res, second.requestId)!.name}=${first.cookie!.split('=')[1]}`;
    expect((await completeInBrowser(server, second.requestId, borrowed)).code).toBeUndefined();
    expect((await completeInBrowser(server, second.requestId, `${first.cookie}; ${second.cookie}`)).code).toBeTruthy();
  });
});

describe(`approval in two tabs of one browser (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => (server = await startTestServer({ REQUIRE_APPROVAL: 'true' })));
  afterAll(() => server.close());

  it('each tab approves its own sign-in with its own form token', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const first = await startAuthorize(server, client);
    const second = await startAuthorize(server, client, {}, first.cookie);
    const browser = `${first.cookie}; ${second.cookie}`;
    for (const tab of [first, second]) {
      await agentAuthenticate(server, { request_id: tab.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    }
    for (const tab of [second, first]) {
      const page = await completeInBrowser(server, tab.requestId, browser);
      const csrf = /name="csrf_token" value="([^"]+)"/.exec(page.res.body)![1];
      const decided = await server.app.inject({
        method: 'POST',
        url: '/authorize/decision',
        headers: { cookie: browser },
        payload: { request_id: tab.requestId, csrf_token: csrf, decision: 'approve' },
      });
      expect(decided.statusCode).toBe(303);
      expect(new URL(decided.headers.location as string).searchParams.get('code')).toBeTruthy();
    }
  });
});
