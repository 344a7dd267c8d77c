import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AccessDeniedError,
  AgentAuthClient,
  AgentAuthError,
  findRequestId,
  InvalidCredentialsError,
  InvalidRequestError,
  parseRetryAfter,
  pollDelay,
  RateLimitedError,
  readRequestId,
  RequestAlreadyAuthenticatedError,
  RequestExpiredError,
  RequestNotFoundError,
  TimeoutError,
} from '../../src/agent/index.js';
import { storeName } from '../helpers/database.js';
import { authenticatedAnswer, authorizeUrl, pkce } from '../helpers/flow.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('the package export agent-auth/agent', () => {
  it('resolves through package.json exports to the built SDK, with everything the source exports', async () => {
    const source = await import('../../src/agent/index.js');
    const published = await import('agent-auth/agent');
    expect(Object.keys(published).sort()).toEqual(Object.keys(source).sort());
    expect(typeof published.AgentAuthClient).toBe('function');
  });
});

describe('findRequestId', () => {
  it('reads the meta tag, whatever the attribute order and quoting', () => {
    expect(findRequestId('<head><meta name="request-id" content="req_abc"></head>')).toBe('req_abc');
    expect(findRequestId("<META content='req_abc' NAME='request-id' />")).toBe('req_abc');
    expect(findRequestId('<meta name=request-id content=req_abc>')).toBe('req_abc');
  });

  it('decodes HTML entities in the meta tag', () => {
    expect(findRequestId('<meta name="request-id" content="a&amp;b&#39;c&#x3c;">')).toBe("a&b'c<");
  });

  it('skips other meta tags', () => {
    expect(findRequestId('<meta name="viewport" content="width=1"><meta name="request-id" content="r1">')).toBe('r1');
  });

  it('falls back to window.authRequest', () => {
    expect(findRequestId('<script>window.authRequest = {"request_id":"req_\\u003cx"};</script>')).toBe('req_<x');
  });

  it('finds nothing on other pages', () => {
    expect(findRequestId('<html><meta name="description" content="shop"></html>')).toBeUndefined();
    expect(findRequestId('<script>window.authRequest = {broken};</script>')).toBeUndefined();
    expect(findRequestId('<script>window.authRequest = {"request_id":""};</script>')).toBeUndefined();
  });
});

describe('readRequestId', () => {
  const html = '<meta name="request-id" content="req_page">';

  it('reads a page through content() when it has no evaluate()', async () => {
    expect(await readRequestId({ content: async () => html })).toBe('req_page');
  });

  it('waits for the page to reach the expected origin', async () => {
    let url = 'http://shop.example/login';
    setTimeout(() => (url = 'http://auth.example/authorize?x=1'), 100);
    const page = { url: () => url, content: async () => html };
    expect(await readRequestId(page, { expectedOrigin: 'http://auth.example', intervalMs: 20 })).toBe('req_page');
  });

  it('never takes an id from a page of another origin', async () => {
    const page = { url: () => 'http://evil.example/authorize', content: async () => html };
    const err = await readRequestId(page, { expectedOrigin: 'http://auth.example', timeoutMs: 200, intervalMs: 20 }).catch((e) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect(err.message).toContain('http://auth.example');
  });

  it('retries while evaluate() fails during a navigation', async () => {
    let calls = 0;
    const page = {
      evaluate: async () => {
        calls++;
        if (calls < 3) throw new Error('Execution context was destroyed');
        return 'req_eval';
      },
    };
    expect(await readRequestId(page, { intervalMs: 10 })).toBe('req_eval');
    expect(calls).toBe(3);
  });

  it('refuses an object that is not a page', async () => {
    await expect(readRequestId({})).rejects.toThrow(TypeError);
  });
});

describe('polling schedule', () => {
  it('polls every second by default', () => {
    expect([0, 1, 5].map((n) => pollDelay(n))).toEqual([1000, 1000, 1000]);
  });

  it('backs off from 1 s, doubling, capped at 30 s', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 10].map((n) => pollDelay(n, { backoff: true }))).toEqual([1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]);
  });

  it('parses Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter('7', now)).toBe(7);
    expect(parseRetryAfter(' 0 ', now)).toBe(0);
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:05 GMT', now)).toBe(5);
    expect(parseRetryAfter('Tue, 31 Dec 2024 23:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});

/** A stand-in agent-auth server whose answers each test scripts, recording when it was called. */
describe('AgentAuthClient against a scripted peer', () => {
  const fake = Fastify();
  let baseUrl: string;
  let hits: { url: string; at: number; body: unknown }[] = [];
  // When the client sent each request and got each answer, read on its side: the gaps the peer
  // sees also carry the latency of each request, which a busy machine stretches at random.
  let sent: number[] = [];
  let answered: number[] = [];
  let answer: (n: number, request: FastifyRequest, reply: FastifyReply) => unknown;

  beforeAll(async () => {
    fake.all('/api/*', async (request, reply) => {
      hits.push({ url: request.url, at: Date.now(), body: request.body });
      return answer(hits.length, request, reply);
    });
    baseUrl = await fake.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => fake.close());

  function client() {
    hits = [];
    sent = [];
    answered = [];
    const timedFetch: typeof fetch = async (input, init) => {
      sent.push(Date.now());
      const res = await fetch(input, init);
      answered.push(Date.now());
      return res;
    };
    return new AgentAuthClient({ baseUrl: `${baseUrl}/`, agentId: 'agent_1', agentSecret: 's3cret', model: 'model-x', fetch: timedFetch });
  }

  it('sends the four fields of the authenticate request as JSON', async () => {
    const c = client();
    answer = (_n, request) => ({ status: 'authenticated', request_id: (request.body as { request_id: string }).request_id });
    expect(await c.authenticate('req_1')).toEqual({ status: 'authenticated', request_id: 'req_1' });
    expect(hits[0].url).toBe('/api/agent/authenticate');
    expect(hits[0].body).toEqual({ request_id: 'req_1', agent_id: 'agent_1', agent_secret: 's3cret', model: 'model-x' });
  });

  it('asks at once, then for long polls, and from a peer that answers at once falls back to the fixed interval', async () => {
    const c = client();
    answer = (n) => ({ status: n < 3 ? 'pending' : n < 4 ? 'authenticated' : 'completed' });
    expect(await c.waitForCompletion('req_1', { intervalMs: 200 })).toEqual({ status: 'completed' });
    expect(hits.map((h) => h.url)).toEqual([
      '/api/check-status?request_id=req_1',
      '/api/check-status?request_id=req_1&wait=25&last_status=pending',
      '/api/check-status?request_id=req_1&wait=25&last_status=pending',
      '/api/check-status?request_id=req_1&wait=25&last_status=authenticated',
    ]);
    // The interval runs from the start of one poll to the start of the next (the client's clock: a
    // few milliseconds pass between the SDK's start of a poll and the fetch call on a busy machine).
    for (let i = 1; i < sent.length; i++) expect(sent[i] - sent[i - 1]).toBeGreaterThanOrEqual(190);
  });

  it('returns at once when the request is already where it should be, without a long poll', async () => {
    const c = client();
    answer = () => ({ status: 'authenticated' });
    expect(await c.waitForCompletion('req_1', { until: 'authenticated' })).toEqual({ status: 'authenticated' });
    expect(hits.map((h) => h.url)).toEqual(['/api/check-status?request_id=req_1']);
  });

  it('polls without wait when long polling is turned off', async () => {
    const c = client();
    answer = (n) => ({ status: n < 2 ? 'pending' : 'completed' });
    await c.waitForCompletion('req_1', { intervalMs: 20, longPoll: false });
    expect(hits.map((h) => h.url)).toEqual(Array(2).fill('/api/check-status?request_id=req_1'));
  });

  it('asks again at once after a poll the peer held for the interval or longer', async () => {
    const c = client();
    answer = async (n) => {
      if (n === 2) await new Promise((r) => setTimeout(r, 1000));
      return { status: n < 3 ? 'pending' : 'completed' };
    };
    await c.waitForCompletion('req_1', { intervalMs: 1000 });
    expect(hits).toHaveLength(3);
    // The second poll was held for the whole interval, so the third follows its answer at once;
    // waiting the interval again would leave a pause of 1000 ms (half of it is margin for a busy machine).
    expect(answered[1] - sent[1]).toBeGreaterThanOrEqual(990);
    expect(sent[2] - answered[1]).toBeLessThan(500);
  });

  it('stops at authenticated when asked to', async () => {
    const c = client();
    answer = (n) => ({ status: n < 2 ? 'pending' : 'authenticated' });
    expect(await c.waitForCompletion('req_1', { intervalMs: 20, until: 'authenticated' })).toEqual({ status: 'authenticated' });
    expect(hits).toHaveLength(2);
  });

  it('backs off exponentially up to the cap', async () => {
    const c = client();
    answer = (n) => ({ status: n < 6 ? 'pending' : 'completed' });
    await c.waitForCompletion('req_1', { intervalMs: 100, maxIntervalMs: 400, backoff: true });
    const gaps = sent.slice(1).map((at, i) => at - sent[i]);
    // Measured at the fetch call, a few milliseconds after the SDK's own start of each poll.
    [100, 200, 400, 400, 400].forEach((expected, i) => expect(gaps[i]).toBeGreaterThanOrEqual(expected - 10));
  });

  it('waits as long as Retry-After (seconds) says before polling again', async () => {
    const c = client();
    answer = (n, _req, reply) =>
      n === 1 ? reply.code(429).header('retry-after', '1').send({ error: 'rate_limited', error_description: 'slow down' }) : { status: 'completed' };
    await c.waitForCompletion('req_1', { intervalMs: 20 });
    expect(sent[1] - answered[0]).toBeGreaterThanOrEqual(990);
  });

  it('honours Retry-After given as an HTTP date', async () => {
    const c = client();
    // Two seconds ahead, truncated to the date's whole seconds: at least one second from now.
    const retryAt = new Date(Date.now() + 2000).toUTCString();
    answer = (n, _req, reply) =>
      n === 1
        ? reply.code(429).header('retry-after', retryAt).send({ error: 'rate_limited', error_description: 'slow down' })
        : { status: 'completed' };
    await c.waitForCompletion('req_1', { intervalMs: 20 });
    expect(sent[1] - answered[0]).toBeGreaterThanOrEqual(990);
  });

  it('gives up at once when Retry-After lies past the deadline', async () => {
    const c = client();
    answer = (_n, _req, reply) => reply.code(429).header('retry-after', '30').send({ error: 'rate_limited', error_description: 'slow down' });
    const started = Date.now();
    const err = await c.waitForCompletion('req_1', { timeoutMs: 2000 }).catch((e) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect(err.cause).toBeInstanceOf(RateLimitedError);
    expect(err.cause.retryAfter).toBe(30);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(hits).toHaveLength(1);
  });

  it('rides out server errors until the deadline', async () => {
    const c = client();
    answer = (n, _req, reply) => (n < 3 ? reply.code(503).send('<html>bad gateway</html>') : { status: 'completed' });
    expect(await c.waitForCompletion('req_1', { intervalMs: 20 })).toEqual({ status: 'completed' });
  });

  it('times out when the request never completes', async () => {
    const c = client();
    answer = () => ({ status: 'pending' });
    const started = Date.now();
    const err = await c.waitForCompletion('req_1', { timeoutMs: 1000, intervalMs: 50 }).catch((e) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect(err.code).toBe('timeout');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(hits.length).toBeGreaterThanOrEqual(3);
  });

  it('stops when the signal aborts', async () => {
    const c = client();
    answer = () => ({ status: 'pending' });
    const err = await c.waitForCompletion('req_1', { signal: AbortSignal.timeout(150), intervalMs: 50 }).catch((e) => e);
    expect(err.name).toBe('TimeoutError');
    expect(err).not.toBeInstanceOf(AgentAuthError);
  });

  it('maps failure bodies to typed errors, unknown codes to the base class', async () => {
    const c = client();
    answer = (_n, _req, reply) => reply.code(418).send({ error: 'teapot', error_description: 'short and stout' });
    const err = await c.authenticate('req_1').catch((e) => e);
    expect(err.constructor).toBe(AgentAuthError);
    expect(err).toMatchObject({ code: 'teapot', description: 'short and stout', status: 418 });

    answer = (_n, _req, reply) => reply.code(429).header('retry-after', '12').send({ error: 'rate_limited', error_description: 'x' });
    const limited = await c.authenticate('req_1').catch((e) => e);
    expect(limited).toBeInstanceOf(RateLimitedError);
    expect(limited).toMatchObject({ status: 429, retryAfter: 12 });

    answer = (_n, _req, reply) => reply.code(502).type('text/html').send('<h1>Bad gateway</h1>');
    expect(await c.authenticate('req_1').catch((e) => e)).toMatchObject({ code: 'server_error', status: 502 });
  });

  it('rejects with the request error that check-status reports', async () => {
    const c = client();
    answer = () => ({ status: 'error', error: 'access_denied', error_description: 'the user denied the sign-in' });
    const err = await c.waitForCompletion('req_1').catch((e) => e);
    expect(err).toBeInstanceOf(AccessDeniedError);
    expect(err.description).toBe('the user denied the sign-in');
  });
});

describe(`AgentAuthClient against the real server (${storeName})`, () => {
  let server: TestServer;
  let baseUrl: string;

  async function listen(env: Parameters<typeof startTestServer>[0] = {}) {
    const s = await startTestServer(env);
    return { server: s, baseUrl: await s.app.listen({ port: 0, host: '127.0.0.1' }) };
  }

  beforeAll(async () => ({ server, baseUrl } = await listen()));
  afterAll(() => server?.close());

  /** What the user's browser does: open /authorize, keeping the binding cookie. */
  async function openAuthorizePage(url: string, client: { client_id: string; redirect_uris: string[] }) {
    const res = await fetch(
      `${url}${authorizeUrl({
        client_id: client.client_id,
        redirect_uri: client.redirect_uris[0],
        response_type: 'code',
        state: 'state-1',
        code_challenge: pkce().challenge,
        code_challenge_method: 'S256',
      })}`,
      { redirect: 'manual' },
    );
    expect(res.status).toBe(200);
    const cookie = res.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    return { html: await res.text(), cookie };
  }

  function agentClient(url: string, agent: { agent_id: string; agent_secret: string }, model = 'gpt-test') {
    return new AgentAuthClient({ baseUrl: url, agentId: agent.agent_id, agentSecret: agent.agent_secret, model });
  }

  it('signs in: page -> authenticate -> browser completes -> completed', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const page = await openAuthorizePage(baseUrl, client);
    const requestId = findRequestId(page.html);
    expect(requestId).toMatch(/\S{16,}/);

    const sdk = agentClient(baseUrl, agent);
    expect(await sdk.checkStatus(requestId!)).toMatchObject({ status: 'pending' });
    expect(await sdk.authenticate(requestId!)).toEqual(authenticatedAnswer(requestId!, client));
    expect(await sdk.waitForCompletion(requestId!, { until: 'authenticated', intervalMs: 50 })).toMatchObject({ status: 'authenticated' });

    const waiting = sdk.waitForCompletion(requestId!, { intervalMs: 50, timeoutMs: 10_000 });
    const done = await fetch(`${baseUrl}/authorize/complete?request_id=${encodeURIComponent(requestId!)}`, {
      headers: { cookie: page.cookie },
      redirect: 'manual',
    });
    expect(done.status).toBe(302);
    expect(new URL(done.headers.get('location')!).searchParams.get('code')).toBeTruthy();
    expect(await waiting).toMatchObject({ status: 'completed' });
  });

  it('reports a wrong secret as InvalidCredentialsError', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const requestId = findRequestId((await openAuthorizePage(baseUrl, client)).html)!;
    const err = await agentClient(baseUrl, { ...agent, agent_secret: 'wrong' })
      .authenticate(requestId)
      .catch((e) => e);
    expect(err).toBeInstanceOf(InvalidCredentialsError);
    expect(err).toMatchObject({ code: 'invalid_credentials', status: 401 });
  });

  it('reports an unknown request as RequestNotFoundError, from both endpoints', async () => {
    const sdk = agentClient(baseUrl, await server.createAgent());
    const fromAuth = await sdk.authenticate('req_does_not_exist').catch((e) => e);
    expect(fromAuth).toBeInstanceOf(RequestNotFoundError);
    expect(fromAuth.status).toBe(404);
    await expect(sdk.waitForCompletion('req_does_not_exist')).rejects.toBeInstanceOf(RequestNotFoundError);
  });

  it('reports a request another agent took as RequestAlreadyAuthenticatedError', async () => {
    const client = await server.createClient();
    const requestId = findRequestId((await openAuthorizePage(baseUrl, client)).html)!;
    await agentClient(baseUrl, await server.createAgent()).authenticate(requestId);
    const err = await agentClient(baseUrl, await server.createAgent())
      .authenticate(requestId)
      .catch((e) => e);
    expect(err).toBeInstanceOf(RequestAlreadyAuthenticatedError);
    expect(err.status).toBe(409);
  });

  it('reports a malformed call as InvalidRequestError', async () => {
    const client = await server.createClient();
    const requestId = findRequestId((await openAuthorizePage(baseUrl, client)).html)!;
    const err = await agentClient(baseUrl, await server.createAgent(), '   ')
      .authenticate(requestId)
      .catch((e) => e);
    expect(err).toBeInstanceOf(InvalidRequestError);
    expect(err.status).toBe(400);
  });

  it('reports an expired request as RequestExpiredError', async () => {
    const short = await listen({ AUTH_REQUEST_TTL_SECONDS: '1' } as never);
    try {
      const client = await short.server.createClient();
      const sdk = agentClient(short.baseUrl, await short.server.createAgent());
      const requestId = findRequestId((await openAuthorizePage(short.baseUrl, client)).html)!;
      await new Promise((r) => setTimeout(r, 1200));
      const fromAuth = await sdk.authenticate(requestId).catch((e) => e);
      expect(fromAuth).toBeInstanceOf(RequestExpiredError);
      expect(fromAuth.status).toBe(400);
      const fromWait = await sdk.waitForCompletion(requestId).catch((e) => e);
      expect(fromWait).toBeInstanceOf(RequestExpiredError);
      expect(fromWait.description).toBe('the authorization request has expired');
    } finally {
      await short.server.close();
    }
  });

  it('reports a sign-in the user denied as AccessDeniedError', async () => {
    const approving = await listen({ REQUIRE_APPROVAL: 'true' } as never);
    try {
      const client = await approving.server.createClient();
      const sdk = agentClient(approving.baseUrl, await approving.server.createAgent());
      const page = await openAuthorizePage(approving.baseUrl, client);
      const requestId = findRequestId(page.html)!;
      await sdk.authenticate(requestId);

      const approval = await fetch(`${approving.baseUrl}/authorize/complete?request_id=${encodeURIComponent(requestId)}`, {
        headers: { cookie: page.cookie },
      });
      const csrf = /name="csrf_token" value="([^"]+)"/.exec(await approval.text())![1];
      const denied = await fetch(`${approving.baseUrl}/authorize/decision`, {
        method: 'POST',
        headers: { cookie: page.cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ request_id: requestId, csrf_token: csrf, decision: 'deny' }),
        redirect: 'manual',
      });
      expect(denied.status).toBe(303);

      const err = await sdk.waitForCompletion(requestId).catch((e) => e);
      expect(err).toBeInstanceOf(AccessDeniedError);
      expect(err.code).toBe('access_denied');
    } finally {
      await approving.server.close();
    }
  });
});
