import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import {
  agentAuthenticate,
  authenticatedAnswer,
  authorizeUrl,
  bindingCookie,
  checkStatus,
  completeInBrowser,
  pkce,
  setRequestExpiry,
  startAuthorize,
} from '../helpers/flow.js';
import { ISSUER, startTestServer, type TestServer } from '../helpers/server.js';

describe(`GET /authorize (${storeName})`, () => {
  let server: TestServer;
  let client: Awaited<ReturnType<TestServer['createClient']>>;
  const { challenge } = pkce();
  let valid: Record<string, string>;

  beforeAll(async () => {
    server = await startTestServer();
    client = await server.createClient(['https://shop.example/callback', 'http://localhost:8080/cb']);
    valid = {
      client_id: client.client_id,
      redirect_uri: 'https://shop.example/callback',
      response_type: 'code',
      state: 'xyz-state',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    };
  });
  afterAll(() => server.close());

  async function countRequests() {
    const { rows } = await server.services.db.query<{ n: number }>('SELECT count(*)::int AS n FROM auth_requests');
    return rows[0].n;
  }

  const cases: [string, Record<string, string | undefined>, string][] = [
    ['missing client_id', { client_id: undefined }, 'invalid_request'],
    ['unknown client_id', { client_id: 'client_nope' }, 'invalid_client'],
    ['missing redirect_uri', { redirect_uri: undefined }, 'invalid_request'],
    ['unregistered redirect_uri', { redirect_uri: 'https://evil.example/callback' }, 'invalid_request'],
    ['redirect_uri differing by a trailing slash', { redirect_uri: 'https://shop.example/callback/' }, 'invalid_request'],
    ['malformed redirect_uri', { redirect_uri: 'not a uri' }, 'invalid_request'],
    ['missing response_type', { response_type: undefined }, 'invalid_request'],
    ['response_type token', { response_type: 'token' }, 'unsupported_response_type'],
    ['missing state', { state: undefined }, 'invalid_request'],
    ['missing code_challenge', { code_challenge: undefined }, 'invalid_request'],
    ['short code_challenge', { code_challenge: 'abc' }, 'invalid_request'],
    ['code_challenge with bad characters', { code_challenge: `${'a'.repeat(42)}=` }, 'invalid_request'],
    ['plain code_challenge_method', { code_challenge_method: 'plain' }, 'invalid_request'],
    ['missing code_challenge_method', { code_challenge_method: undefined }, 'invalid_request'],
    ['unknown scope', { scope: 'openid admin' }, 'invalid_scope'],
    ['over-long state', { state: 'x'.repeat(5000) }, 'invalid_request'],
  ];

  it.each(cases)('%s -> 400 HTML page naming %s, no redirect, nothing stored', async (_name, override, code) => {
    const before = await countRequests();
    const res = await server.app.inject({ url: authorizeUrl({ ...valid, ...override }) });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers.location).toBeUndefined();
    expect(res.body).toContain(`<code id="error-code">${code}</code>`);
    expect(await countRequests()).toBe(before);
  });

  it('first failure wins: an unknown client is reported before a bad redirect_uri', async () => {
    const res = await server.app.inject({ url: authorizeUrl({ ...valid, client_id: 'client_nope', redirect_uri: 'x' }) });
    expect(res.body).toContain('invalid_client');
  });

  // Each request fails two checks; the page names the earlier one, in the order docs/protocol.md gives.
  const twoFailures: [string, Record<string, string | undefined>, string, RegExp][] = [
    ['unknown client, over-long state', { client_id: 'client_nope', state: 'x'.repeat(5000) }, 'invalid_client', /client/i],
    ['unknown client, bad scope', { client_id: 'client_nope', scope: 'admin' }, 'invalid_client', /client/i],
    [
      'bad redirect_uri, response_type token',
      { redirect_uri: 'https://evil.example/cb', response_type: 'token' },
      'invalid_request',
      /redirect_uri/i,
    ],
    ['response_type token, no state', { response_type: 'token', state: undefined }, 'unsupported_response_type', /response_type/i],
    ['no state, short code_challenge', { state: undefined, code_challenge: 'abc' }, 'invalid_request', /state/i],
    ['short code_challenge, plain method', { code_challenge: 'abc', code_challenge_method: 'plain' }, 'invalid_request', /code_challenge must/i],
    ['plain method, unknown scope', { code_challenge_method: 'plain', scope: 'admin' }, 'invalid_request', /S256/i],
    [
      'over-long redirect_uri, response_type token',
      { redirect_uri: `https://shop.example/${'x'.repeat(3000)}`, response_type: 'token' },
      'invalid_request',
      /redirect_uri/i,
    ],
  ];
  it.each(twoFailures)('first failure wins: %s -> %s', async (_name, override, code, description) => {
    const res = await server.app.inject({ url: authorizeUrl({ ...valid, ...override }) });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain(`<code id="error-code">${code}</code>`);
    expect(res.body).toMatch(description);
  });

  it('first failure wins: an unknown client is reported before a repeated parameter', async () => {
    const res = await server.app.inject({ url: `${authorizeUrl({ ...valid, client_id: 'client_nope' })}&state=second` });
    expect(res.body).toContain('<code id="error-code">invalid_client</code>');
  });

  it('refuses an inactive client with invalid_client', async () => {
    const other = await server.createClient();
    await server.adminCall('PATCH', `/admin/clients/${other.client_id}`, { active: false });
    const res = await server.app.inject({ url: authorizeUrl({ ...valid, client_id: other.client_id, redirect_uri: other.redirect_uris[0] }) });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('invalid_client');
  });

  it('refuses a duplicated parameter with invalid_request', async () => {
    const res = await server.app.inject({ url: `${authorizeUrl(valid)}&state=second` });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('invalid_request');
  });

  it('escapes reflected values on the error page', async () => {
    const res = await server.app.inject({ url: authorizeUrl({ ...valid, response_type: '<script>alert(1)</script>' }) });
    expect(res.statusCode).toBe(400);
    expect(res.body).not.toContain('<script>alert(1)</script>');
    expect(res.body).toContain('&lt;script&gt;');
  });

  it('shows the page with the request id twice, the binding cookie and the security headers', async () => {
    const { res, requestId } = await startAuthorize(server, client);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(requestId).toMatch(/^req_/);
    expect(res.body).toContain(`window.authRequest = { request_id: "${requestId}", redirect_origin: "https://shop.example" };`);
    expect(res.body).toContain('<meta name="redirect-origin" content="https://shop.example">');
    // One cookie per sign-in, over plain http (this issuer) kept to /authorize*.
    const cookie = bindingCookie(res, requestId)!;
    expect(cookie.httpOnly).toBe(true);
    expect(cookie.sameSite).toBe('Lax');
    expect(cookie.path).toBe('/authorize');

    const csp = String(res.headers['content-security-policy']);
    expect(csp).toContain("frame-ancestors 'none'");
    const nonce = /script-src[^;]*'nonce-([^']+)'/.exec(csp)?.[1];
    expect(nonce).toBeTruthy();
    expect(csp).not.toContain('unsafe-inline');
    // every inline script carries the nonce
    const scripts = res.body.match(/<script[^>]*>/g) ?? [];
    expect(scripts.length).toBeGreaterThan(0);
    for (const tag of scripts) expect(tag).toContain(`nonce="${nonce}"`);
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['cache-control']).toBe('no-store');
    // without JavaScript, a meta refresh moves on
    expect(res.body).toContain(`<noscript><meta http-equiv="refresh" content="2;url=/authorize/complete?request_id=${requestId}">`);
  });

  it('defaults the scope to openid email profile and accepts the loopback redirect', async () => {
    const { requestId } = await startAuthorize(server, client, { redirect_uri: 'http://localhost:8080/cb' });
    const { rows } = await server.services.db.query<{ scope: string }>('SELECT scope FROM auth_requests WHERE id = $1', [requestId]);
    expect(rows[0].scope).toBe('openid email profile');
  });

  it('runs pending -> authenticated -> completed and redirects with code, state and iss', async () => {
    const agent = await server.createAgent();
    const { requestId, cookie, state } = await startAuthorize(server, client);
    expect((await checkStatus(server, requestId)).json()).toEqual({ status: 'pending' });

    // still pending: the browser sees the waiting page again
    const early = await completeInBrowser(server, requestId, cookie);
    expect(early.res.statusCode).toBe(200);
    expect(early.res.body).toContain('Waiting for your agent');

    const auth = await agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    expect(auth.statusCode).toBe(200);
    expect(auth.json()).toEqual(authenticatedAnswer(requestId, client));
    expect((await checkStatus(server, requestId)).json()).toEqual({ status: 'authenticated' });

    const done = await completeInBrowser(server, requestId, cookie);
    expect(done.res.statusCode).toBe(302);
    expect(done.location!.startsWith('https://shop.example/callback?')).toBe(true);
    expect(done.params.get('code')).toMatch(/^aa_code_/);
    expect(done.params.get('state')).toBe(state);
    expect(done.params.get('iss')).toBe(ISSUER);
    const status = await checkStatus(server, requestId);
    expect(status.json()).toEqual({ status: 'completed' });
    expect(status.body).not.toContain(done.params.get('code')!);

    // the code is kept only as a hash
    const { rows } = await server.services.db.query<{ code_hash: string }>('SELECT code_hash FROM auth_codes WHERE request_id = $1', [requestId]);
    expect(rows).toHaveLength(1);
    expect(rows[0].code_hash).not.toBe(done.params.get('code'));

    // a second visit never delivers the same code again: the same browser, back before the code was
    // redeemed, gets a fresh one in its place (test/agent-sign-in/complete-retry.test.ts)
    const again = await completeInBrowser(server, requestId, cookie);
    expect(again.res.statusCode).toBe(302);
    expect(again.params.get('code')).toMatch(/^aa_code_/);
    expect(again.params.get('code')).not.toBe(done.params.get('code'));
  });

  it("refuses /authorize/complete without the binding cookie or with another browser's", async () => {
    const agent = await server.createAgent();
    const { requestId } = await startAuthorize(server, client);
    await agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    const none = await completeInBrowser(server, requestId, undefined);
    expect(none.res.statusCode).toBe(400);
    expect(none.location).toBeUndefined();
    const other = await startAuthorize(server, client);
    const foreign = await completeInBrowser(server, requestId, other.cookie);
    expect(foreign.res.statusCode).toBe(400);
    expect(foreign.res.body).toContain('another browser');
    expect((await checkStatus(server, requestId)).json()).toEqual({ status: 'authenticated' });
  });

  it('binds each sign-in with a cookie of its own, so several complete in one browser (tabs)', async () => {
    const first = await startAuthorize(server, client);
    // The second tab opens with the first one's cookie in the browser.
    const second = await startAuthorize(server, client, {}, first.cookie);
    expect(second.cookie).not.toBe(first.cookie);
    const browser = `${first.cookie}; ${second.cookie}`;
    const agent = await server.createAgent();
    for (const r of [second, first]) {
      await agentAuthenticate(server, { request_id: r.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
      expect((await completeInBrowser(server, r.requestId, browser)).code).toBeTruthy();
    }
  });
});

describe(`POST /api/agent/authenticate and GET /api/check-status (${storeName})`, () => {
  let server: TestServer;
  let client: Awaited<ReturnType<TestServer['createClient']>>;
  let agent: Awaited<ReturnType<TestServer['createAgent']>>;

  beforeAll(async () => {
    server = await startTestServer();
    client = await server.createClient();
    agent = await server.createAgent();
  });
  afterAll(() => server.close());

  it('answers unknown agent, wrong secret and inactive agent with one 401 body', async () => {
    const { requestId } = await startAuthorize(server, client);
    const inactive = await server.createAgent();
    await server.adminCall('PATCH', `/admin/agents/${inactive.agent_id}`, { active: false });
    const attempts = [
      { agent_id: 'agent_unknown', agent_secret: agent.agent_secret },
      { agent_id: agent.agent_id, agent_secret: `${agent.agent_secret}x` },
      { agent_id: inactive.agent_id, agent_secret: inactive.agent_secret },
    ];
    const bodies = [];
    for (const a of attempts) {
      const res = await agentAuthenticate(server, { request_id: requestId, ...a });
      expect(res.statusCode).toBe(401);
      bodies.push(res.body);
    }
    expect(new Set(bodies).size).toBe(1);
    expect(JSON.parse(bodies[0])).toEqual({ error: 'invalid_credentials', error_description: expect.any(String) });
    expect((await checkStatus(server, requestId)).json()).toEqual({ status: 'pending' });
  });

  it.each([
    ['missing model', { model: undefined }],
    ['empty model', { model: '' }],
    ['over-long model', { model: 'm'.repeat(201) }],
    ['numeric agent_id', { agent_id: 42 }],
    ['array request_id', { request_id: ['a', 'b'] }],
    ['null secret', { agent_secret: null }],
  ])('answers %s with 400 invalid_request', async (_name, override) => {
    const { requestId } = await startAuthorize(server, client);
    const res = await server.app.inject({
      method: 'POST',
      url: '/api/agent/authenticate',
      payload: { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret, model: 'm1', ...override },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'invalid_request', error_description: expect.any(String) });
    expect((await checkStatus(server, requestId)).json()).toEqual({ status: 'pending' });
  });

  it('answers malformed JSON with 400 invalid_request', async () => {
    const res = await server.app.inject({
      method: 'POST',
      url: '/api/agent/authenticate',
      headers: { 'content-type': 'application/json' },
      payload: '{"request_id": ',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_request');
  });

  it('answers an unknown request with 404 not_found', async () => {
    const res = await agentAuthenticate(server, { request_id: 'req_nope', agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: 'not_found', error_description: 'the authorization request does not exist' });
    const status = await checkStatus(server, 'req_nope');
    expect(status.statusCode).toBe(404);
    expect(status.headers['cache-control']).toBe('no-store');
    expect(status.json()).toEqual({ error: 'not_found', error_description: 'the authorization request does not exist' });
  });

  it('answers check-status without request_id with 400 invalid_request', async () => {
    const res = await server.app.inject({ url: '/api/check-status' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_request');
  });

  it('is idempotent for the same agent and refuses a second agent with 409', async () => {
    const { requestId } = await startAuthorize(server, client);
    const body = { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret };
    expect((await agentAuthenticate(server, body)).statusCode).toBe(200);
    const repeat = await agentAuthenticate(server, body);
    expect(repeat.statusCode).toBe(200);
    expect(repeat.json()).toEqual(authenticatedAnswer(requestId, client));
    const other = await server.createAgent();
    const second = await agentAuthenticate(server, { request_id: requestId, agent_id: other.agent_id, agent_secret: other.agent_secret });
    expect(second.statusCode).toBe(409);
    expect(second.json()).toEqual({
      error: 'request_already_authenticated',
      error_description: 'another agent has already authenticated this request',
    });
    // The same agent again, reporting another model: a conflict too, and the answer says which.
    const otherModel = await agentAuthenticate(server, { ...body, model: 'another-model' });
    expect(otherModel.statusCode).toBe(409);
    expect(otherModel.json()).toEqual({
      error: 'request_already_authenticated',
      error_description: 'this agent has already authenticated this request with another model',
    });
    const { rows } = await server.services.db.query<{ agent_id: string; model: string }>('SELECT agent_id, model FROM auth_requests WHERE id = $1', [
      requestId,
    ]);
    expect(rows[0]).toEqual({ agent_id: agent.agent_id, model: 'test-model-1' });
  });
});

describe(`request expiry (${storeName})`, () => {
  let server: TestServer;
  let shortLived: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
    shortLived = await startTestServer({ AUTH_REQUEST_TTL_SECONDS: '1' });
  });
  afterAll(async () => {
    await shortLived.close();
    await server.close();
  });

  it('reports request_expired at check-status, authenticate and on the page after AUTH_REQUEST_TTL_SECONDS', async () => {
    const server = shortLived;
    const client = await server.createClient();
    const agent = await server.createAgent();
    const { requestId, cookie } = await startAuthorize(server, client);
    await new Promise((r) => setTimeout(r, 1200));
    const status = await checkStatus(server, requestId);
    expect(status.statusCode).toBe(200);
    expect(status.json()).toEqual({ status: 'error', error: 'request_expired', error_description: 'the authorization request has expired' });
    const auth = await agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    expect(auth.statusCode).toBe(400);
    expect(auth.json()).toEqual({ error: 'request_expired', error_description: 'the authorization request has expired' });
    const page = await completeInBrowser(server, requestId, cookie);
    expect(page.res.statusCode).toBe(400);
    expect(page.res.body).toContain('request_expired');
  });

  it('does not complete a request that expired after the agent authenticated', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const { requestId, cookie } = await startAuthorize(server, client);
    expect((await agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret })).statusCode).toBe(
      200,
    );
    await setRequestExpiry(server, requestId, -1);
    const page = await completeInBrowser(server, requestId, cookie);
    expect(page.res.statusCode).toBe(400);
    expect(page.location).toBeUndefined();
    expect((await checkStatus(server, requestId)).json().error).toBe('request_expired');
  });
});

describe(`REQUIRE_APPROVAL=true (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ REQUIRE_APPROVAL: 'true' });
  });
  afterAll(() => server.close());

  async function toApprovalPage() {
    const client = await server.createClient();
    await server.adminCall('PATCH', `/admin/clients/${client.client_id}`, { name: 'Shop <b>&</b> Co' });
    const agent = await server.createAgent('owner@example.com');
    const started = await startAuthorize(server, client, { scope: 'email' });
    await agentAuthenticate(server, {
      request_id: started.requestId,
      agent_id: agent.agent_id,
      agent_secret: agent.agent_secret,
      model: 'claude-test',
    });
    const page = await completeInBrowser(server, started.requestId, started.cookie);
    const csrf = /name="csrf_token" value="([^"]+)"/.exec(page.res.body)?.[1];
    return { ...started, client, agent, page, csrf: csrf! };
  }

  function decide(requestId: string, cookie: string | undefined, csrf: string, decision: string) {
    return server.app.inject({
      method: 'POST',
      url: '/authorize/decision',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
      payload: new URLSearchParams({ request_id: requestId, csrf_token: csrf, decision }).toString(),
    });
  }

  it('shows the agent, its model, the email, the website and the scopes, escaped', async () => {
    const { page, agent } = await toApprovalPage();
    expect(page.res.statusCode).toBe(200);
    const body = page.res.body;
    expect(body).toContain(agent.agent_id);
    expect(body).toContain('claude-test');
    expect(body).toContain('owner@example.com');
    expect(body).toContain('Shop &lt;b&gt;&amp;&lt;/b&gt; Co');
    expect(body).not.toContain('<b>&</b>');
    expect(body).toContain('>Approve</button>');
    expect(body).toContain('>Deny</button>');
  });

  it('escapes what the agent reports about itself: its model and its name', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    await server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { name: '<img src=x onerror=alert(1)>' });
    const started = await startAuthorize(server, client);
    const model = '"><script>alert(2)</script>';
    await agentAuthenticate(server, { request_id: started.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret, model });
    const { body } = (await completeInBrowser(server, started.requestId, started.cookie)).res;
    expect(body).not.toContain('<img src=x');
    expect(body).not.toContain('<script>alert(2)');
    expect(body).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(body).toContain('&quot;&gt;&lt;script&gt;alert(2)&lt;/script&gt;');
  });

  it('Approve redirects with a code', async () => {
    const { requestId, cookie, csrf, state } = await toApprovalPage();
    const res = await decide(requestId, cookie, csrf, 'approve');
    expect(res.statusCode).toBe(303);
    const params = new URL(res.headers.location as string).searchParams;
    expect(params.get('code')).toMatch(/^aa_code_/);
    expect(params.get('state')).toBe(state);
    expect(params.get('iss')).toBe(ISSUER);
    expect((await checkStatus(server, requestId)).json()).toEqual({ status: 'completed' });
  });

  it('Deny redirects with access_denied, state and iss, and check-status reports it', async () => {
    const { requestId, cookie, csrf, state } = await toApprovalPage();
    const res = await decide(requestId, cookie, csrf, 'deny');
    expect(res.statusCode).toBe(303);
    const params = new URL(res.headers.location as string).searchParams;
    expect(params.get('error')).toBe('access_denied');
    expect(params.get('state')).toBe(state);
    expect(params.get('iss')).toBe(ISSUER);
    expect(params.get('code')).toBeNull();
    expect((await checkStatus(server, requestId)).json()).toEqual({
      status: 'error',
      error: 'access_denied',
      error_description: 'this sign-in was denied',
    });
  });

  it('refuses a decision with a wrong CSRF token or without the cookie', async () => {
    const { requestId, cookie, csrf } = await toApprovalPage();
    expect((await decide(requestId, cookie, 'forged', 'approve')).statusCode).toBe(400);
    expect((await decide(requestId, undefined, csrf, 'approve')).statusCode).toBe(400);
    expect((await decide(requestId, cookie, csrf, 'maybe')).statusCode).toBe(400);
    expect((await checkStatus(server, requestId)).json()).toEqual({ status: 'authenticated' });
  });
});
