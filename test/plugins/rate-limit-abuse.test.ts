import { Agent, request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { addressKey } from '../../src/plugins/rate-limit.js';
import { codeForClient } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { startAuthorize } from '../helpers/flow.js';
import { type ListeningServer, startListeningServer } from '../helpers/listening.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// The rightful owner and the attacker: two source addresses on loopback.
const OWNER = '127.0.0.1';
const ATTACKER = '127.0.0.2';

// The shipped limits, which the test server otherwise raises for tests that send many requests.
const DEFAULT_LIMITS = {
  RATE_LIMIT_AUTHENTICATE_PER_IP: undefined,
  RATE_LIMIT_AUTHENTICATE_PER_AGENT: undefined,
  RATE_LIMIT_CLIENT_PER_CLIENT: undefined,
  RATE_LIMIT_CLIENT_FAILURES_PER_IP: undefined,
  RATE_LIMIT_CLIENT_FAILURES_PER_CLIENT: undefined,
};

type Client = Awaited<ReturnType<TestServer['createClient']>>;

function form(server: TestServer, url: string, fields: Record<string, string>, remoteAddress = OWNER, headers: Record<string, string> = {}) {
  return server.app.inject({
    method: 'POST',
    url,
    remoteAddress,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: new URLSearchParams(fields).toString(),
  });
}

const authenticate = (server: TestServer, body: Record<string, string>, remoteAddress = OWNER, headers: Record<string, string> = {}) =>
  server.app.inject({ method: 'POST', url: '/api/agent/authenticate', remoteAddress, headers, payload: { model: 'test-model-1', ...body } });

/** The fields of a code exchange with the client's real secret, as the website sends them. */
async function codeExchange(server: TestServer, client: Client) {
  const { code, verifier } = await codeForClient(server, client);
  const { client_id, client_secret } = client;
  return { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: client.redirect_uris[0], client_id, client_secret };
}

const exchangeFreshCode = async (server: TestServer, client: Client, remoteAddress = OWNER) =>
  form(server, '/token', await codeExchange(server, client), remoteAddress);

describe(`a website cannot be locked out by someone else's failures (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(DEFAULT_LIMITS);
  });
  afterAll(() => server.close());

  it('ships no limit on authenticated calls of a client (never below 6,000 a minute), with a knob to set one', () => {
    expect(server.services.config.rateLimits.clientPerClient).toBe(0);
    expect(loadConfig({ DATA_DIR: 'memory', ADMIN_TOKEN: 'x'.repeat(16) }).rateLimits).toMatchObject({ clientPerClient: 0, windowSeconds: 60 });
    expect(loadConfig({ DATA_DIR: 'memory', ADMIN_TOKEN: 'x'.repeat(16), RATE_LIMIT_CLIENT_PER_CLIENT: '6000' }).rateLimits.clientPerClient).toBe(
      6000,
    );
  });

  it('answers the real client from another address after 610 wrong-secret calls, and limits the attacker', async () => {
    const client = await server.createClient();
    const wrong = {
      grant_type: 'authorization_code',
      code: 'x',
      redirect_uri: client.redirect_uris[0],
      code_verifier: 'v'.repeat(43),
      client_id: client.client_id,
      client_secret: 'wrong',
    };
    const statuses = new Map<number, number>();
    for (let i = 0; i < 610; i++) {
      const { statusCode } = await form(server, '/token', wrong, ATTACKER);
      statuses.set(statusCode, (statuses.get(statusCode) ?? 0) + 1);
    }
    expect(statuses.get(401)).toBe(20);
    expect(statuses.get(429)).toBe(590);
    // The attacker's address stays refused for this client, even with the right secret.
    expect((await exchangeFreshCode(server, client, ATTACKER)).statusCode).toBe(429);

    const owner = await exchangeFreshCode(server, client);
    expect(owner.statusCode).toBe(200);
    const { access_token: accessToken } = owner.json();
    const credentials = { client_id: client.client_id, client_secret: client.client_secret };
    expect((await form(server, '/introspect', { ...credentials, token: accessToken })).json()).toMatchObject({ active: true });
    expect((await form(server, '/revoke', { ...credentials, token: accessToken })).statusCode).toBe(200);
  });

  it('limits an address by all its failed client authentications, whatever client they name', async () => {
    const clients = await Promise.all(Array.from({ length: 16 }, () => server.createClient()));
    const statuses: number[] = [];
    // 16 clients × 20 failures: the per-address budget (300) runs out before the per-client ones.
    for (const client of clients) {
      for (let i = 0; i < 20; i++)
        statuses.push(
          (await form(server, '/introspect', { client_id: client.client_id, client_secret: 'wrong', token: 'x' }, '10.1.1.1')).statusCode,
        );
    }
    expect(statuses.filter((s) => s === 401)).toHaveLength(300);
    expect(statuses.slice(300).every((s) => s === 429)).toBe(true);
    // the clients themselves, from their own address, are unaffected
    expect((await exchangeFreshCode(server, clients[0])).statusCode).toBe(200);
  });

  it('never counts successful calls against the failure budgets', async () => {
    const client = await server.createClient();
    const { access_token: token } = (await exchangeFreshCode(server, client, '10.2.2.2')).json();
    for (let i = 0; i < 40; i++) {
      const res = await form(server, '/introspect', { client_id: client.client_id, client_secret: client.client_secret, token }, '10.2.2.2');
      expect(res.statusCode).toBe(200);
    }
    const wrong = { client_id: client.client_id, client_secret: 'wrong', token };
    const failures = [];
    for (let i = 0; i < 21; i++) failures.push((await form(server, '/introspect', wrong, '10.2.2.2')).statusCode);
    expect(failures.slice(0, 20).every((s) => s === 401)).toBe(true);
    expect(failures[20]).toBe(429);
  });
});

describe(`an agent cannot be locked out by someone else's failures (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer(DEFAULT_LIMITS);
  });
  afterAll(() => server.close());

  it('authenticates the agent from its own address after 21 wrong-secret attempts from another', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const { requestId } = await startAuthorize(server, client);
    const wrong = { request_id: requestId, agent_id: agent.agent_id, agent_secret: 'aa_as_wrong' };
    const attacker = [];
    for (let i = 0; i < 25; i++) attacker.push((await authenticate(server, wrong, ATTACKER)).statusCode);
    expect(attacker.slice(0, 20)).toEqual(Array(20).fill(401));
    expect(attacker.slice(20)).toEqual(Array(5).fill(429));
    // refused at the attacker's address even with the right secret
    expect((await authenticate(server, { ...wrong, agent_secret: agent.agent_secret }, ATTACKER)).statusCode).toBe(429);

    const owner = await authenticate(server, { ...wrong, agent_secret: agent.agent_secret });
    expect(owner.statusCode).toBe(200);
    expect(owner.json()).toMatchObject({ status: 'authenticated', request_id: requestId });
  });

  it('limits an address by all its failed authenticates, across agents', async () => {
    const statuses = [];
    for (let i = 0; i < 61; i++)
      statuses.push((await authenticate(server, { request_id: 'req_unknown', agent_id: `agent_${i}`, agent_secret: 'x' }, '10.3.3.3')).statusCode);
    expect(statuses.slice(0, 60)).toEqual(Array(60).fill(401));
    expect(statuses[60]).toBe(429);
  });
});

describe(`the lockout over real sockets from two addresses (${storeName})`, () => {
  let server: ListeningServer;
  beforeAll(async () => {
    server = await startListeningServer(DEFAULT_LIMITS);
  });
  afterAll(() => server.close());

  /** POST over TCP from `localAddress`, as a separate machine would. */
  function post(path: string, body: Record<string, string>, localAddress: string, agent: Agent) {
    const payload = new URLSearchParams(body).toString();
    return new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(
        `${server.issuer}${path}`,
        {
          method: 'POST',
          localAddress,
          agent,
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(payload) },
        },
        (res) => {
          let text = '';
          res.on('data', (chunk) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, body: text }));
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }

  it('gives the website 200 at /token while the attacker at 127.0.0.2 gets 429', async () => {
    const agent = new Agent({ keepAlive: true });
    try {
      const client = await server.createClient();
      const wrong = { grant_type: 'refresh_token', refresh_token: 'aa_rt_x', client_id: client.client_id, client_secret: 'wrong' };
      const attacker = [];
      for (let i = 0; i < 610; i++) attacker.push((await post('/token', wrong, ATTACKER, agent)).status);
      expect(attacker.filter((s) => s === 401)).toHaveLength(20);
      expect(attacker.at(-1)).toBe(429);

      const owner = await post('/token', await codeExchange(server, client), OWNER, agent);
      expect(owner.status).toBe(200);
      expect(JSON.parse(owner.body)).toMatchObject({ token_type: 'Bearer' });
    } finally {
      agent.destroy();
    }
  });
});

describe(`TRUST_PROXY (${storeName})`, () => {
  let hops: TestServer;
  let listed: TestServer;
  beforeAll(async () => {
    hops = await startTestServer({ TRUST_PROXY: '1', RATE_LIMIT_AUTHENTICATE_PER_IP: '2' });
    listed = await startTestServer({ TRUST_PROXY: '10.0.0.0/8', RATE_LIMIT_AUTHENTICATE_PER_IP: '1' });
  });
  afterAll(async () => {
    await hops.close();
    await listed.close();
  });
  const body = { request_id: 'req_unknown', agent_id: 'agent_x', agent_secret: 'x' };

  it('with a hop count, keys a client by the address the load balancer appended, whatever it prepends', async () => {
    // The load balancer (10.0.0.1) appends the address it saw; the client forges the rest.
    const viaLoadBalancer = (forged: string, client: string) => authenticate(hops, body, '10.0.0.1', { 'x-forwarded-for': `${forged}, ${client}` });
    expect((await viaLoadBalancer('198.51.100.1', '203.0.113.7')).statusCode).toBe(401);
    expect((await viaLoadBalancer('198.51.100.2', '203.0.113.7')).statusCode).toBe(401);
    expect((await viaLoadBalancer('198.51.100.3', '203.0.113.7')).statusCode).toBe(429);
    // another client behind the same load balancer has its own budget
    expect((await viaLoadBalancer('198.51.100.3', '203.0.113.8')).statusCode).toBe(401);
  });

  it('accepts the forms of Fastify trustProxy and refuses anything else', () => {
    const trust = (TRUST_PROXY: string) => loadConfig({ DATA_DIR: 'memory', ADMIN_TOKEN: 'x'.repeat(16), TRUST_PROXY }).trustProxy;
    expect(trust('true')).toBe(true);
    expect(trust('false')).toBe(false);
    expect(trust('2')).toBe(2);
    expect(trust('10.0.0.0/8, 127.0.0.1,::1, fd00::/8,loopback')).toEqual(['10.0.0.0/8', '127.0.0.1', '::1', 'fd00::/8', 'loopback']);
    expect(() => trust('10.0.0.0/33')).toThrow(/TRUST_PROXY/);
    expect(() => trust('proxy.example')).toThrow(/TRUST_PROXY/);
  });

  it('with a list of addresses, believes X-Forwarded-For from a listed proxy only', async () => {
    expect((await authenticate(listed, body, '10.0.0.1', { 'x-forwarded-for': '203.0.113.7' })).statusCode).toBe(401);
    expect((await authenticate(listed, body, '10.0.0.2', { 'x-forwarded-for': '203.0.113.7' })).statusCode).toBe(429);
    // a direct caller's header is ignored: it is keyed by its own address
    expect((await authenticate(listed, body, '192.0.2.9', { 'x-forwarded-for': '203.0.113.8' })).statusCode).toBe(401);
    expect((await authenticate(listed, body, '192.0.2.9', { 'x-forwarded-for': '203.0.113.9' })).statusCode).toBe(429);
  });
});

describe(`IPv6 clients are keyed by their /64 (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_AUTHENTICATE_PER_IP: '2' });
  });
  afterAll(() => server.close());

  it('shares one budget across a /64 and not beyond', async () => {
    const body = { request_id: 'req_unknown', agent_id: 'agent_x', agent_secret: 'x' };
    expect((await authenticate(server, body, '2001:db8:1:2::1')).statusCode).toBe(401);
    expect((await authenticate(server, body, '2001:db8:1:2:ffff:ffff:ffff:fffe')).statusCode).toBe(401);
    expect((await authenticate(server, body, '2001:db8:1:2:abcd::5')).statusCode).toBe(429);
    expect((await authenticate(server, body, '2001:db8:1:3::1')).statusCode).toBe(401);
  });

  it('normalises the ways of writing an address', () => {
    expect(addressKey('2001:DB8:0001:2::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8::')).toBe('2001:db8:0:0::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(addressKey('64:ff9b:1:2:3:4:192.0.2.1')).toBe('64:ff9b:1:2::/64');
    expect(addressKey('::ffff:192.0.2.1')).toBe('192.0.2.1');
    expect(addressKey('192.0.2.1')).toBe('192.0.2.1');
  });
});
