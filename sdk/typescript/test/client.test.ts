import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AccessDeniedError,
  AgentAuthClient,
  AgentAuthError,
  parseRetryAfter,
  pollDelay,
  RateLimitedError,
  TimeoutError,
  WrongWebsiteError,
} from '../src/index.js';
import { type Answer, reply, startPeer } from './peer.js';

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

describe('AgentAuthClient against a scripted peer', () => {
  let peer: Awaited<ReturnType<typeof startPeer>>;
  let hits: { url: string; body: unknown }[] = [];
  // When the client sent each request and got each answer, read on its side: the gaps the peer
  // sees also carry the latency of each request, which a busy machine stretches at random.
  let sent: number[] = [];
  let answered: number[] = [];
  let answer: (n: number, request: { url: string; body: unknown }) => Answer | Promise<Answer>;

  beforeAll(async () => {
    peer = await startPeer(() => answer);
  });
  afterAll(() => peer.close());

  function client() {
    peer.hits.length = 0;
    hits = peer.hits;
    sent = [];
    answered = [];
    const timedFetch: typeof fetch = async (input, init) => {
      sent.push(Date.now());
      const res = await fetch(input, init);
      answered.push(Date.now());
      return res;
    };
    return new AgentAuthClient({ baseUrl: `${peer.url}/`, agentId: 'agent_1', agentSecret: 's3cret', model: 'model-x', fetch: timedFetch });
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
    answer = (n) =>
      n === 1 ? reply(429, { error: 'rate_limited', error_description: 'slow down' }, { 'retry-after': '1' }) : { status: 'completed' };
    await c.waitForCompletion('req_1', { intervalMs: 20 });
    expect(sent[1] - answered[0]).toBeGreaterThanOrEqual(990);
  });

  it('honours Retry-After given as an HTTP date', async () => {
    const c = client();
    // Two seconds ahead, truncated to the date's whole seconds: at least one second from now.
    const retryAt = new Date(Date.now() + 2000).toUTCString();
    answer = (n) =>
      n === 1 ? reply(429, { error: 'rate_limited', error_description: 'slow down' }, { 'retry-after': retryAt }) : { status: 'completed' };
    await c.waitForCompletion('req_1', { intervalMs: 20 });
    expect(sent[1] - answered[0]).toBeGreaterThanOrEqual(990);
  });

  it('gives up at once when Retry-After lies past the deadline', async () => {
    const c = client();
    answer = () => reply(429, { error: 'rate_limited', error_description: 'slow down' }, { 'retry-after': '30' });
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
    answer = (n) => (n < 3 ? reply(503, '<html>bad gateway</html>') : { status: 'completed' });
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
    answer = () => reply(418, { error: 'teapot', error_description: 'short and stout' });
    const err = await c.authenticate('req_1').catch((e) => e);
    expect(err.constructor).toBe(AgentAuthError);
    expect(err).toMatchObject({ code: 'teapot', description: 'short and stout', status: 418 });

    answer = () => reply(429, { error: 'rate_limited', error_description: 'x' }, { 'retry-after': '12' });
    const limited = await c.authenticate('req_1').catch((e) => e);
    expect(limited).toBeInstanceOf(RateLimitedError);
    expect(limited).toMatchObject({ status: 429, retryAfter: 12 });

    answer = () => reply(502, '<h1>Bad gateway</h1>', { 'content-type': 'text/html' });
    expect(await c.authenticate('req_1').catch((e) => e)).toMatchObject({ code: 'server_error', status: 502 });
  });

  it('rejects with the request error that check-status reports', async () => {
    const c = client();
    answer = () => ({ status: 'error', error: 'access_denied', error_description: 'the user denied the sign-in' });
    const err = await c.waitForCompletion('req_1').catch((e) => e);
    expect(err).toBeInstanceOf(AccessDeniedError);
    expect(err.description).toBe('the user denied the sign-in');
  });

  it('compares an internationalised expected website with the punycode origin the server names', async () => {
    const c = client();
    const page = { content: async () => '<meta name="request-id" content="req_1">' };
    answer = (_n, request) =>
      request.url === '/api/agent/authenticate'
        ? { status: 'authenticated', redirect_origin: 'https://xn--bcher-kva.example' }
        : { status: 'completed' };
    expect(await c.signIn(page, { expectedWebsite: 'https://bücher.example/login' })).toMatchObject({ requestId: 'req_1', status: 'completed' });
    expect(hits[0].body).toMatchObject({ expected_redirect_origin: 'https://xn--bcher-kva.example' });
    expect(await c.signIn(page, { expectedWebsite: 'https://bucher.example' }).catch((e) => e)).toBeInstanceOf(WrongWebsiteError);
  });
});
