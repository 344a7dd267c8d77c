import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csrfToken } from '../../src/agent-sign-in/browser-binding.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, checkStatus, pkce, setRequestExpiry, startAuthorize } from '../helpers/flow.js';
import {
  bodies,
  type Body,
  encodeBody,
  expectHtmlError,
  expectReached,
  type Fixtures,
  fuzz,
  FUZZ_TIMEOUT,
  headerValue,
  hostile,
  HUGE,
  mostlyValid,
  nastyString,
  otherMethods,
  rawQueryFragments,
  Ref,
  ref,
  type Response,
  urlencoded,
} from '../helpers/fuzz.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/** Every answer of a browser route is a page: the error page for 4xx, whatever the method. */
function checkPage(res: Response, ok: number[]) {
  if (ok.includes(res.statusCode)) return;
  expectHtmlError(res);
}

// With REQUIRE_APPROVAL the browser routes have the most to do: the approval page, the form, Approve and Deny.
describe(`fuzzing the browser routes (${storeName})`, { timeout: FUZZ_TIMEOUT }, () => {
  let server: TestServer;
  let fixtures: Fixtures;
  let client: Awaited<ReturnType<TestServer['createClient']>>;
  let agent: Awaited<ReturnType<TestServer['createAgent']>>;
  // The fuzzed browser: the binding cookie (name=secret) of each sign-in it started.
  const jar = new Map<string, string>();
  const secretOf = (requestId: string) => jar.get(requestId)!.split('=')[1];
  const cookieFor = (requestIds: string[]) => requestIds.map((id) => jar.get(id)).join('; ');

  async function startInBrowser() {
    const started = await startAuthorize(server, client);
    jar.set(started.requestId, started.cookie!);
    return started.requestId;
  }

  async function authenticatedRequest() {
    const requestId = await startInBrowser();
    await agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    return requestId;
  }

  async function decide(requestId: string, decision: string) {
    const res = await server.app.inject({
      method: 'POST',
      url: '/authorize/decision',
      headers: { cookie: cookieFor([requestId]) },
      payload: { request_id: requestId, csrf_token: csrfToken(secretOf(requestId), requestId), decision },
    });
    if (res.statusCode !== 303) throw new Error(`decision failed: ${res.body}`);
  }

  beforeAll(async () => {
    server = await startTestServer({ REQUIRE_APPROVAL: 'true' });
    client = await server.createClient(['https://shop.example/callback', 'http://localhost:8080/cb']);
    const inactive = await server.createClient();
    await server.adminCall('PATCH', `/admin/clients/${inactive.client_id}`, { active: false });
    agent = await server.createAgent();

    const completed = await authenticatedRequest();
    await decide(completed, 'approve');
    const denied = await authenticatedRequest();
    await decide(denied, 'deny');
    const expired = await authenticatedRequest();
    await setRequestExpiry(server, expired, -60);
    // The first read of an overdue request records its expiry (a write by design): get it done here.
    await checkStatus(server, expired);
    const authenticated = await authenticatedRequest();
    const pending = await startInBrowser();
    const live = [pending, authenticated, completed, denied, expired];

    fixtures = {
      client_id: client.client_id,
      inactive_client_id: inactive.client_id,
      redirect_uri: client.redirect_uris[0],
      redirect_uri_2: client.redirect_uris[1],
      challenge: pkce().challenge,
      cookie: cookieFor(live),
      // Right names, values this browser was never given.
      other_cookie: live.map((id) => `agent_auth_${id}=${randomBytes(32).toString('base64url')}`).join('; '),
      pending_id: pending,
      authenticated_id: authenticated,
      csrf: csrfToken(secretOf(authenticated), authenticated),
      completed_id: completed,
      denied_id: denied,
      expired_id: expired,
    };
  });
  afterAll(() => server.close());

  /** Approve and Deny end the authenticated request: prepare another. */
  async function refresh() {
    const current = await server.services.store.signIns.observe(fixtures.authenticated_id as string);
    if (current?.status === 'authenticated') return;
    const authenticated = await authenticatedRequest();
    fixtures.authenticated_id = authenticated;
    fixtures.csrf = csrfToken(secretOf(authenticated), authenticated);
    fixtures.cookie = cookieFor(requestIds.map((name) => fixtures[name] as string));
  }

  const cookieHeader = fc.oneof(
    { weight: 6, arbitrary: ref('cookie') },
    { weight: 1, arbitrary: ref('other_cookie') },
    { weight: 1, arbitrary: fc.constant(undefined) },
    {
      weight: 2,
      arbitrary: fc.oneof(
        nastyString,
        nastyString.map((v) => `agent_auth_req_0=${v}`),
      ),
    },
  );
  const requestIds = ['pending_id', 'authenticated_id', 'completed_id', 'denied_id', 'expired_id'];
  const anyRequestId = fc.constantFrom(...requestIds).chain(ref);
  const methodOr = (usual: 'GET' | 'POST') =>
    fc.oneof({ weight: 14, arbitrary: fc.constant<string>(usual) }, fc.constantFrom(...otherMethods(usual)));

  const headers = (cookieValue: unknown) => (typeof cookieValue === 'string' ? { cookie: headerValue(cookieValue) } : {});

  interface PageRequest {
    method: string;
    query: Record<string, unknown>;
    raw: string[];
    cookie: unknown;
  }
  const pageRequest = ({ method, query, raw, cookie: c }: PageRequest, url: string) => ({
    method: method as 'GET',
    url: `${url}?${urlencoded(query, raw)}`,
    headers: headers(c),
  });

  // Regressions (found by this file): these were JSON, or a 500 for the NUL.
  it('the browser paths answer the HTML error page for a wrong method, an over-large body and a NUL', async () => {
    const wrongMethod = await server.app.inject({ method: 'POST', url: '/authorize', payload: { client_id: 'x' } });
    expect(wrongMethod.statusCode).toBe(404);
    expectHtmlError(wrongMethod);
    expect(wrongMethod.body).toContain('<code id="error-code">not_found</code>');

    const tooLarge = await server.app.inject({
      method: 'DELETE',
      url: '/authorize/decision',
      headers: { 'content-type': 'text/plain' },
      payload: HUGE,
    });
    expect(tooLarge.statusCode).toBe(413);
    expectHtmlError(tooLarge);

    const nul = await server.app.inject({ url: '/authorize?client_id=%00' });
    expect(nul.statusCode).toBe(400);
    expect(nul.body).toContain('<code id="error-code">invalid_request</code>');
  });

  it('GET /authorize: no 5xx, 4xx is the HTML page naming the code, nothing stored when refused', async () => {
    const report = await fuzz({
      app: server.app,
      db: server.services.db,
      numRuns: 400,
      fixtures: () => fixtures,
      arbitrary: fc.record({
        method: methodOr('GET'),
        query: mostlyValid({
          client_id: [fc.oneof({ weight: 5, arbitrary: ref('client_id') }, ref('inactive_client_id')), hostile({ like: 'client_id' })],
          redirect_uri: [fc.oneof(ref('redirect_uri'), ref('redirect_uri_2')), hostile({ like: 'redirect_uri' })],
          response_type: [fc.constant('code'), fc.oneof(fc.constantFrom('token', 'id_token', 'code token', 'CODE'), hostile())],
          state: [fc.string({ minLength: 1, maxLength: 64 }), hostile()],
          code_challenge: [ref('challenge'), hostile({ like: 'challenge' })],
          code_challenge_method: [fc.constant('S256'), fc.oneof(fc.constantFrom('plain', 's256', 'S512'), hostile())],
          scope: [
            fc.constantFrom(undefined, 'openid', 'email', 'profile', 'openid email profile', 'email  openid'),
            fc.oneof(fc.constantFrom('admin', 'openid offline_access', 'openid\temail', 'OPENID'), hostile()),
          ],
        }),
        raw: rawQueryFragments,
        cookie: cookieHeader,
      }),
      request: (input: PageRequest) => pageRequest(input, '/authorize'),
      check: ({ res }) => {
        checkPage(res, [200]);
        if (res.statusCode === 200) expect(res.body).toMatch(/<meta name="request-id" content="req_[^"]+">/);
      },
    });
    expectReached(report, {
      statuses: [200, 404],
      codes: ['invalid_request', 'invalid_client', 'unsupported_response_type', 'invalid_scope', 'not_found'],
    });
  });

  it('GET /authorize/complete: no 5xx, 4xx is the HTML page, never a write (the approval page only shows)', async () => {
    const report = await fuzz({
      app: server.app,
      db: server.services.db,
      numRuns: 250,
      fixtures: () => fixtures,
      readOnly: true,
      arbitrary: fc.record({
        method: methodOr('GET'),
        query: mostlyValid({ request_id: [anyRequestId, hostile({ like: 'authenticated_id' })] }),
        raw: rawQueryFragments,
        cookie: cookieHeader,
      }),
      request: (input: PageRequest) => pageRequest(input, '/authorize/complete'),
      check: ({ res }) => checkPage(res, [200]),
    });
    expectReached(report, { statuses: [200], codes: ['invalid_request', 'not_found', 'request_expired', 'access_denied'] });
  });

  it('POST /authorize/decision: no 5xx, 4xx is the HTML page, nothing written when refused', async () => {
    const report = await fuzz({
      app: server.app,
      db: server.services.db,
      numRuns: 300,
      fixtures: () => fixtures,
      refresh,
      arbitrary: fc.record({
        method: methodOr('POST'),
        body: bodies(
          mostlyValid({
            request_id: [fc.oneof({ weight: 6, arbitrary: ref('authenticated_id') }, anyRequestId), hostile({ like: 'authenticated_id' })],
            csrf_token: [ref('csrf'), hostile({ like: 'csrf' })],
            decision: [fc.constantFrom('approve', 'deny'), fc.oneof(fc.constantFrom('Approve', 'yes', 'approve deny'), hostile())],
          }),
          'form',
        ),
        cookie: cookieHeader,
      }),
      // A decision on a denied and on an expired request, which the generators reach only now and then.
      examples: ['denied_id', 'expired_id'].map((id) => ({
        method: 'POST',
        body: {
          kind: 'form',
          value: { request_id: new Ref(id), csrf_token: new Ref('csrf'), decision: 'approve' },
          raw: [],
          contentType: 'application/x-www-form-urlencoded',
        } as Body,
        cookie: new Ref('cookie'),
      })),
      request: ({ method, body, cookie: c }: { method: string; body: Body; cookie: unknown }) => {
        const encoded = method === 'GET' || method === 'OPTIONS' ? { headers: {} } : encodeBody(body);
        return { method: method as 'POST', url: '/authorize/decision', ...encoded, headers: { ...encoded.headers, ...headers(c) } };
      },
      check: ({ res }) => {
        checkPage(res, [303]);
        if (res.statusCode === 303) expect(res.headers.location).toMatch(/^https:\/\/shop\.example\/callback\?/);
      },
    });
    expectReached(report, { statuses: [303, 404, 413, 415], codes: ['invalid_request', 'not_found', 'access_denied', 'request_expired'] });
  });
});
