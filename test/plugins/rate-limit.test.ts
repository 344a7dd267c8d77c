import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, checkStatus, startAuthorize } from '../helpers/flow.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

function expectLimited(res: { statusCode: number; headers: Record<string, unknown> }) {
  expect(res.statusCode).toBe(429);
  expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
  // Refused before the handler, still with the security headers.
  expect(res.headers['x-frame-options']).toBe('DENY');
  expect(String(res.headers['content-security-policy'])).toContain("frame-ancestors 'none'");
}

describe(`rate limits in one process (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      RATE_LIMIT_AUTHORIZE_PER_IP: '3',
      RATE_LIMIT_CHECK_STATUS_PER_IP: '4',
      RATE_LIMIT_AUTHENTICATE_PER_AGENT: '2',
    });
  });
  afterAll(() => server.close());

  it('limits /authorize per IP with 429, Retry-After and the error code on the page', async () => {
    const client = await server.createClient();
    const ok = [];
    for (let i = 0; i < 3; i++) ok.push((await startAuthorize(server, client)).res.statusCode);
    expect(ok).toEqual([200, 200, 200]);
    const { res } = await startAuthorize(server, client);
    expectLimited(res);
    expect(res.body).toContain('rate_limited');
    // another address has its own budget
    const other = await server.app.inject({ url: '/authorize?client_id=x', remoteAddress: '10.9.8.7' });
    expect(other.statusCode).toBe(400);
  });

  it('limits /api/check-status per IP with the JSON error body', async () => {
    const codes = [];
    for (let i = 0; i < 5; i++) codes.push((await checkStatus(server, 'req_unknown')).statusCode);
    expect(codes).toEqual([404, 404, 404, 404, 429]);
    const res = await checkStatus(server, 'req_unknown');
    expectLimited(res);
    expect(res.json()).toEqual({ error: 'rate_limited', error_description: expect.stringMatching(/retry after/) });
  });

  it('limits failed /api/agent/authenticate calls per agent_id and address, even with the right secret after', async () => {
    const agent = await server.createAgent();
    const body = { request_id: 'req_unknown', agent_id: agent.agent_id, agent_secret: 'wrong' };
    expect((await agentAuthenticate(server, body)).statusCode).toBe(401);
    expect((await agentAuthenticate(server, body)).statusCode).toBe(401);
    const limited = await agentAuthenticate(server, { ...body, agent_secret: agent.agent_secret });
    expectLimited(limited);
    expect(limited.json().error).toBe('rate_limited');
    // a different agent is not affected
    const other = await server.createAgent();
    expect((await agentAuthenticate(server, { ...body, agent_id: other.agent_id })).statusCode).toBe(401);
    // nor is the same agent from another address: its secret is checked (the request id is unknown)
    const elsewhere = await server.app.inject({
      method: 'POST',
      url: '/api/agent/authenticate',
      remoteAddress: '10.9.8.7',
      payload: { ...body, agent_secret: agent.agent_secret, model: 'm' },
    });
    expect(elsewhere.statusCode).toBe(404);
  });
});

describe(`authenticate per IP (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_AUTHENTICATE_PER_IP: '2' });
  });
  afterAll(() => server.close());

  it('limits failed /api/agent/authenticate calls per address across agents', async () => {
    const body = (agent_id: string) => ({ request_id: 'req_unknown', agent_id, agent_secret: 'x' });
    expect((await agentAuthenticate(server, body('agent_a'))).statusCode).toBe(401);
    expect((await agentAuthenticate(server, body('agent_b'))).statusCode).toBe(401);
    expectLimited(await agentAuthenticate(server, body('agent_c')));
  });
});

describe(`limits shared through Redis across instances (${storeName})`, () => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    const env = { REDIS_URL, RATE_LIMIT_AUTHENTICATE_PER_AGENT: '3' };
    [a, b] = await Promise.all([startTestServer(env), startTestServer(env)]);
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
  });

  it('counts failures on both instances against one budget', async () => {
    // A fresh agent id keys the counter, so earlier runs against the same Redis do not interfere.
    const agent = await a.createAgent();
    const body = { request_id: 'req_unknown', agent_id: agent.agent_id, agent_secret: 'wrong' };
    expect((await agentAuthenticate(a, body)).statusCode).toBe(401);
    expect((await agentAuthenticate(b, body)).statusCode).toBe(401);
    expect((await agentAuthenticate(a, body)).statusCode).toBe(401);
    // a has seen two failures itself, the shared count is three: a refuses at once, with no lookup
    expectLimited(await agentAuthenticate(a, body));
    // b learns it from its own next failure (a budget is checked in memory, counted in Redis)
    expect((await agentAuthenticate(b, body)).statusCode).toBe(401);
    expectLimited(await agentAuthenticate(b, body));
  });
});

describe(`client endpoints per client_id (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_CLIENT_PER_CLIENT: '3', RATE_LIMIT_CLIENT_FAILURES_PER_IP: '3' });
  });
  afterAll(() => server.close());

  it('shares one budget of authenticated calls per client across /token, /introspect and /revoke, for post and Basic alike', async () => {
    const client = await server.createClient();
    const post = (url: string, payload: Record<string, string>, headers: Record<string, string> = {}) =>
      server.app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        payload: new URLSearchParams(payload).toString(),
      });
    const creds = { client_id: client.client_id, client_secret: client.client_secret };
    // Calls without the secret spend none of it.
    for (const address of ['10.1.1.1', '10.1.1.2']) {
      const forged = await server.app.inject({
        method: 'POST',
        url: '/introspect',
        remoteAddress: address,
        payload: { ...creds, client_secret: 'wrong', token: 'x' },
      });
      expect(forged.statusCode).toBe(401);
    }
    expect((await post('/token', { ...creds, grant_type: 'refresh_token', refresh_token: 'aa_rt_x' })).statusCode).toBe(400);
    expect((await post('/introspect', { ...creds, token: 'x' })).statusCode).toBe(200);
    expect((await post('/revoke', { ...creds, token: 'x' })).statusCode).toBe(200);
    const basic = `Basic ${Buffer.from(`${client.client_id}:${client.client_secret}`).toString('base64')}`;
    const limited = await post('/introspect', { token: 'x' }, { authorization: basic });
    expectLimited(limited);
    expect(limited.json()).toEqual({ error: 'rate_limited', error_description: expect.any(String) });
    // another client is unaffected
    const other = await server.createClient();
    expect((await post('/introspect', { client_id: other.client_id, client_secret: other.client_secret, token: 'x' })).statusCode).toBe(200);
  });

  it('counts failed requests, naming a client or none (or a malformed one), by address', async () => {
    const post = (url: string, headers: Record<string, string> = {}) =>
      server.app.inject({
        method: 'POST',
        url,
        remoteAddress: '10.9.8.7',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        payload: 'token=x',
      });
    expect((await post('/token')).statusCode).toBe(401);
    expect((await post('/introspect', { authorization: 'Basic !!!' })).statusCode).toBe(400);
    expect((await post('/revoke')).statusCode).toBe(401);
    expectLimited(await post('/introspect'));
  });
});
