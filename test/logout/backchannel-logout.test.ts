/**
 * Back-channel logout (OpenID Connect Back-Channel Logout 1.0): every revocation path writes one
 * delivery with the revocation, the sender POSTs one verifiable logout token to the website, retries
 * a refused one under the same jti without holding anyone up, and nothing is lost or doubled across
 * restarts and instances. A real HTTP receiver stands in for the website.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLocalJWKSet, decodeJwt, jwtVerify } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { addressProblem } from '../../src/logout/delivery-address.js';
import { type LogoutSender, retryDelay, SENDER_TIMINGS, type SenderTimings, startLogoutSender } from '../../src/logout/sender.js';
import { issueTokens, refresh, revoke } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { freePort } from '../helpers/listening.js';
import { within } from '../helpers/poll.js';
import { ISSUER, startSecondInstance, startTestServer, type TestServer } from '../helpers/server.js';

const EVENT = 'http://schemas.openid.net/event/backchannel-logout';
// Short enough for a test: a refused delivery comes back within a second.
const FAST: SenderTimings = { timeout: 1, lease: 3, poll: 0.1, firstDelay: 0.2, maxDelay: 0.5, giveUpAfter: 3600 };

type Mode = 'ok' | 'error' | 'redirect' | 'slow' | 'endless';

/** The website's logout endpoint: records every logout token it is sent, answers as `mode` says. */
async function startReceiver() {
  const tokens: string[] = [];
  // endless: bytes of body written, and whether the sender has closed the connection.
  const state = { mode: 'ok' as Mode, streamed: 0, closed: false };
  const server: Server = createServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      expect(req.method).toBe('POST');
      expect(req.headers['content-type']).toBe('application/x-www-form-urlencoded');
      tokens.push(new URLSearchParams(body).get('logout_token')!);
      if (state.mode === 'ok') return void res.writeHead(200).end();
      if (state.mode === 'error') return void res.writeHead(500).end();
      if (state.mode === 'redirect') return void res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end();
      if (state.mode === 'slow') return void setTimeout(() => res.writeHead(200).end(), 3000);
      // 200, then a body that never ends, written as fast as the reader takes it.
      const chunk = Buffer.alloc(64 * 1024, 'x');
      res.writeHead(200);
      res.on('close', () => (state.closed = true));
      const pump = () => {
        while (!res.destroyed) {
          state.streamed += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
      };
      pump();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const uri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/backchannel-logout`;
  return {
    tokens,
    state,
    uri,
    /** The tokens received so far that name this session. */
    of: (sid: string) => tokens.filter((t) => decodeJwt(t).sid === sid),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe(`back-channel logout (${storeName})`, () => {
  let server: TestServer;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let sender: LogoutSender | undefined;
  let website: { client_id: string; client_secret: string; redirect_uris: string[] };

  const startSender = async (on: TestServer = server, timings = FAST) =>
    startLogoutSender({ ...on.services, signingKeys: on.services.signingKeys!, log: on.app.log }, timings);

  beforeAll(async () => {
    server = await startTestServer({ ID_TOKEN_SIGNING_ALG: 'RS256' });
    receiver = await startReceiver();
    const created = await server.adminCall('POST', '/admin/clients', {
      name: 'Logout website',
      redirect_uris: ['https://shop.example/callback'],
      backchannel_logout_uri: receiver.uri,
    });
    expect(created.statusCode, JSON.stringify(created.json)).toBe(201);
    expect(created.json.backchannel_logout_uri).toBe(receiver.uri);
    website = created.json;
  });
  afterEach(async () => {
    await sender?.stop();
    sender = undefined;
    Object.assign(receiver.state, { mode: 'ok', streamed: 0, closed: false });
  });
  afterAll(async () => {
    await receiver.close();
    await server.close();
  });

  /** A sign-in at the website: its tokens, and the session id its ID token carries. */
  async function signedIn(agent?: { agent_id: string; agent_secret: string; email: string }) {
    const signer = agent ?? (await server.createAgent());
    const tokens = (await issueTokens(server, { client: website, agent: signer, scope: 'openid' })) as Awaited<ReturnType<typeof issueTokens>> & {
      id_token: string;
    };
    const sid = decodeJwt(tokens.id_token).sid as string;
    expect(sid).toEqual(expect.any(String));
    return { agent: signer, tokens, sid };
  }

  /** Waits for the one logout token of `sid` and checks it as a relying party must (Back-Channel Logout §2.6). */
  async function logoutTokenOf(sid: string, agentId: string) {
    expect(await within(5000, async () => receiver.of(sid).length > 0), `a logout token for ${sid}`).toBe(true);
    const jwks = (await server.app.inject('/.well-known/jwks.json')).json();
    const [token] = receiver.of(sid);
    const { payload, protectedHeader } = await jwtVerify(token, createLocalJWKSet(jwks), {
      issuer: ISSUER,
      audience: website.client_id,
      typ: 'logout+jwt',
      algorithms: ['RS256'],
    });
    expect(protectedHeader.kid).toEqual(expect.any(String));
    expect(payload).toEqual({
      iss: ISSUER,
      aud: website.client_id,
      iat: expect.any(Number),
      exp: expect.any(Number),
      jti: expect.any(String),
      sub: agentId,
      sid,
      events: { [EVENT]: {} },
    });
    expect(payload.exp! - payload.iat!).toBeLessThanOrEqual(120);
    expect(payload.exp!).toBeGreaterThan(Date.now() / 1000);
    return payload;
  }

  it('sends one verifiable logout token for every revocation path, and none for the website’s own /revoke', async () => {
    sender = await startSender();
    const admin = (url: string, body?: unknown) => server.adminCall('POST', url, body);
    const paths: [string, (s: Awaited<ReturnType<typeof signedIn>>) => Promise<unknown>][] = [
      ['one grant', async ({ sid }) => admin(`/admin/grants/${sid}/revoke`)],
      ['the agent’s kill switch', async ({ agent }) => admin(`/admin/agents/${agent.agent_id}/revoke-grants`)],
      ['every agent of a user', async ({ agent }) => admin('/admin/users/revoke-grants', { email: agent.email })],
      ['agent deactivated', async ({ agent }) => server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { active: false })],
      ['agent deleted', async ({ agent }) => server.adminCall('DELETE', `/admin/agents/${agent.agent_id}`)],
      [
        'refresh token reuse',
        async ({ tokens }) => {
          const next = (await refresh(server, website, tokens.refresh_token)).json();
          expect((await refresh(server, website, next.refresh_token)).statusCode).toBe(200);
          // The first token, spent before its successor was: theft.
          expect((await refresh(server, website, tokens.refresh_token)).statusCode).toBe(400);
        },
      ],
    ];
    for (const [name, end] of paths) {
      const session = await signedIn();
      await end(session);
      const payload = await logoutTokenOf(session.sid, session.agent.agent_id);
      expect(receiver.of(session.sid), name).toHaveLength(1);
      expect(payload.sub, name).toBe(session.agent.agent_id);
    }

    // Every grant of the website at once: one token per session.
    const sessions = [await signedIn(), await signedIn()];
    expect((await admin(`/admin/clients/${website.client_id}/revoke-grants`)).json.revoked).toBeGreaterThanOrEqual(2);
    for (const session of sessions) await logoutTokenOf(session.sid, session.agent.agent_id);

    // The website revoking its own refresh token knows already: nothing is written, nothing sent.
    const own = await signedIn();
    expect((await revoke(server, website, own.tokens.refresh_token)).statusCode).toBe(200);
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.of(own.sid)).toEqual([]);
    const { rows } = await server.services.db.query(`SELECT 1 FROM logout_deliveries WHERE sid = $1`, [own.sid]);
    expect(rows).toEqual([]);

    // Each delivered session once, no more, after the sender had time to double anything.
    await new Promise((r) => setTimeout(r, 500));
    const sids = receiver.tokens.map((t) => decodeJwt(t).sid);
    expect(new Set(sids).size).toBe(sids.length);
  });

  it('retries a refused delivery (500, redirect, no answer in time) under the same jti, without slowing the revocation', async () => {
    sender = await startSender();
    const session = await signedIn();
    receiver.state.mode = 'slow';
    const started = Date.now();
    expect((await server.adminCall('POST', `/admin/grants/${session.sid}/revoke`)).json).toEqual({ revoked: 1 });
    // The revocation answered at once: the delivery is the sender's, off the request's path.
    expect(Date.now() - started).toBeLessThan(1000);

    expect(await within(5000, async () => receiver.of(session.sid).length >= 1)).toBe(true);
    receiver.state.mode = 'error';
    expect(await within(5000, async () => receiver.of(session.sid).length >= 2)).toBe(true);
    receiver.state.mode = 'redirect';
    expect(await within(5000, async () => receiver.of(session.sid).length >= 3)).toBe(true);
    receiver.state.mode = 'ok';
    expect(
      await within(5000, async () => {
        const { rows } = await server.services.db.query<{ status: string }>(`SELECT status FROM logout_deliveries WHERE sid = $1`, [session.sid]);
        return rows[0].status === 'delivered';
      }),
    ).toBe(true);
    const jtis = new Set(receiver.of(session.sid).map((t) => decodeJwt(t).jti));
    expect(jtis.size).toBe(1);
    expect(receiver.of(session.sid).length).toBeGreaterThanOrEqual(4);
    // Each attempt is a token of its own (fresh iat and exp) under that one jti, and each verifies.
    await logoutTokenOf(session.sid, session.agent.agent_id);
    const { rows } = await server.services.db.query<{ attempts: number; last_error: string | null }>(
      `SELECT attempts, last_error FROM logout_deliveries WHERE sid = $1`,
      [session.sid],
    );
    expect(rows[0]).toEqual({ attempts: receiver.of(session.sid).length, last_error: null });
  });

  it('reads a few KB of an endless reply, then closes the connection', async () => {
    // With the production timeout, which a drained body would last out.
    sender = await startLogoutSender(
      { ...server.services, signingKeys: server.services.signingKeys!, log: server.app.log },
      { ...FAST, timeout: SENDER_TIMINGS.timeout },
    );
    receiver.state.mode = 'endless';
    const session = await signedIn();
    await server.adminCall('POST', `/admin/grants/${session.sid}/revoke`);
    expect(await within(2000, async () => receiver.state.closed)).toBe(true);
    // What the sender read (4 KB), plus what the loopback's socket buffers held when it closed (a
    // few MB): far from the hundreds of megabytes an endless body drained for the whole timeout came to.
    expect(receiver.state.streamed).toBeLessThan(16 * 1024 * 1024);
    // The sender records the delivery after it has closed the connection, so the row may lag a moment.
    expect(
      await within(2000, async () => {
        const { rows } = await server.services.db.query<{ status: string }>(`SELECT status FROM logout_deliveries WHERE sid = $1`, [session.sid]);
        return rows[0].status === 'delivered';
      }),
    ).toBe(true);
    const streamed = receiver.state.streamed;
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.state.streamed).toBe(streamed);
  });

  it('refuses at delivery a URI that resolves to a private address, unless LOGOUT_ALLOW_PRIVATE_NETWORKS allows it', async () => {
    // Registered while the deployment allowed it; the setting has since been turned off.
    const intranet = await server.createClient();
    await server.services.db.query(`UPDATE clients SET backchannel_logout_uri = 'https://10.255.255.1/logout' WHERE id = $1`, [intranet.client_id]);
    sender = await startSender();
    const { agent } = await issueTokens(server, { client: intranet, scope: 'openid' });
    await server.adminCall('POST', `/admin/agents/${agent.agent_id}/revoke-grants`);
    const row = async () =>
      (
        await server.services.db.query<{ last_error: string | null }>(`SELECT last_error FROM logout_deliveries WHERE client_id = $1`, [
          intranet.client_id,
        ])
      ).rows[0];
    expect(await within(5000, async () => (await row())?.last_error !== null)).toBe(true);
    expect((await row()).last_error).toMatch(/^refused: the URI must not resolve to a private, shared or unique-local address/);
  });

  it('keeps retrying a website that is not there, the first retry within 15 s', async () => {
    // With the production timings: the first retry waits 5 to 10 s, later ones double up to 10 minutes.
    for (let i = 0; i < 200; i++) {
      expect(retryDelay(1, SENDER_TIMINGS)).toBeGreaterThanOrEqual(5);
      expect(retryDelay(1, SENDER_TIMINGS)).toBeLessThanOrEqual(10);
      expect(retryDelay(30, SENDER_TIMINGS)).toBeLessThanOrEqual(600);
    }
    const gone = await server.adminCall('POST', '/admin/clients', {
      name: 'Gone website',
      redirect_uris: ['https://gone.example/callback'],
      backchannel_logout_uri: `http://127.0.0.1:${await freePort()}/logout`,
    });
    sender = await startSender();
    const { agent } = await issueTokens(server, { client: gone.json, scope: 'openid' });
    await server.adminCall('POST', `/admin/agents/${agent.agent_id}/revoke-grants`);
    const row = async () =>
      (
        await server.services.db.query<{ status: string; attempts: number; last_error: string | null }>(
          `SELECT status, attempts, last_error FROM logout_deliveries WHERE client_id = $1`,
          [gone.json.client_id],
        )
      ).rows[0];
    expect(await within(5000, async () => (await row())?.attempts >= 2)).toBe(true);
    expect(await row()).toMatchObject({ status: 'pending', last_error: expect.stringMatching(/^could not connect/) });
  });

  it('gives a delivery up after an hour of refusals, counts it, lists it, and retries it on request', async () => {
    sender = await startSender();
    receiver.state.mode = 'error';
    const session = await signedIn();
    await server.adminCall('POST', `/admin/grants/${session.sid}/revoke`);
    expect(await within(5000, async () => receiver.of(session.sid).length >= 1)).toBe(true);
    // An hour has passed since the revocation: the next refusal is the last.
    await server.services.db.query(`UPDATE logout_deliveries SET created_at = now() - interval '61 minutes' WHERE sid = $1`, [session.sid]);
    const failed = async () =>
      (await server.adminCall('GET', '/admin/logout-deliveries?status=failed')).json.deliveries as { jti: string; sid: string }[];
    expect(await within(5000, async () => (await failed()).some((d) => d.sid === session.sid))).toBe(true);
    const [delivery] = (await failed()).filter((d) => d.sid === session.sid);
    expect(delivery).toMatchObject({ client_id: website.client_id, status: 'failed', last_error: 'answered 500', reason: 'admin_grant' });

    const metrics = (await server.admin.inject({ url: '/metrics' })).body;
    expect(metrics).toMatch(/agent_auth_logout_deliveries_total\{result="failed"\} [1-9]/);
    expect(metrics).toMatch(/agent_auth_logout_deliveries_total\{result="retried"\} [1-9]/);

    // The operator fixes the website and retries the one delivery.
    receiver.state.mode = 'ok';
    const retried = await server.adminCall('POST', `/admin/logout-deliveries/${delivery.jti}/retry`);
    expect(retried.statusCode).toBe(200);
    expect(retried.json.status).toBe('pending');
    expect(
      await within(5000, async () =>
        (await server.adminCall('GET', `/admin/logout-deliveries?client_id=${website.client_id}`)).json.deliveries.some(
          (d: { jti: string; status: string }) => d.jti === delivery.jti && d.status === 'delivered',
        ),
      ),
    ).toBe(true);
    expect(new Set(receiver.of(session.sid).map((t) => decodeJwt(t).jti))).toEqual(new Set([delivery.jti]));
    // Only a failed delivery can be retried.
    expect((await server.adminCall('POST', `/admin/logout-deliveries/${delivery.jti}/retry`)).statusCode).toBe(404);
  });

  it('keeps deliveries across a restart, and takes over one whose sender died mid-delivery once its lease runs out', async () => {
    // No sender runs (the instance is down): the revocation still writes the delivery.
    const session = await signedIn();
    await server.adminCall('POST', `/admin/grants/${session.sid}/revoke`);
    // An instance claims it and dies before sending anything.
    const claimed = await server.services.store.logoutDeliveries.claimDue({ limit: 10, leaseSeconds: 1, perWebsite: 10, inFlight: new Map() });
    expect(claimed.map((d) => d.sid)).toContain(session.sid);
    // The instance that starts next picks it up when the lease has run out.
    sender = await startSender();
    await logoutTokenOf(session.sid, session.agent.agent_id);
    expect(receiver.of(session.sid)).toHaveLength(1);
  });

  it('delivers each logout token once with two instances sending from one outbox', async () => {
    const second = await startSecondInstance(server);
    // Leases that outlast a busy machine: a lease that runs out is a retry by design (the test above), not a double claim.
    const unhurried = { ...FAST, lease: 30 };
    sender = await startSender(server, unhurried);
    const other = await startSender(second, unhurried);
    try {
      const sessions = [];
      for (let i = 0; i < 6; i++) sessions.push(await signedIn());
      await server.adminCall('POST', `/admin/clients/${website.client_id}/revoke-grants`);
      for (const session of sessions) await logoutTokenOf(session.sid, session.agent.agent_id);
      await new Promise((r) => setTimeout(r, 500));
      for (const session of sessions) expect(receiver.of(session.sid)).toHaveLength(1);
    } finally {
      await other.stop();
      await second.close();
    }
  });
});

const PRIVATE_URIS = [
  'https://10.0.0.1/logout',
  'https://172.16.0.1/logout',
  'https://172.31.255.254/logout',
  'https://192.168.1.1/logout',
  'https://100.64.0.1/logout',
  'https://100.127.255.254/logout',
  'https://[fd00::1]/logout',
  'https://[fc00::1]/logout',
  'https://[::ffff:10.0.0.1]/logout',
  'https://[::ffff:c0a8:101]/logout',
];

/** A website registered with this logout URI, as the admin API answers it. */
const registerWebsite = (on: TestServer, backchannelLogoutUri: string) =>
  on.adminCall('POST', '/admin/clients', {
    name: 'Website',
    redirect_uris: ['https://shop.example/cb'],
    backchannel_logout_uri: backchannelLogoutUri,
  });

async function expectRefused(on: TestServer, uris: string[], error: string) {
  for (const uri of uris) {
    const res = await registerWebsite(on, uri);
    expect(res.statusCode, uri).toBe(400);
    expect(res.json.error, uri).toBe(error);
  }
}

describe(`back-channel logout registration (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ ID_TOKEN_SIGNING_ALG: 'RS256', ADMIN_PORT: '3999' });
  });
  afterAll(() => server.close());

  it('refuses URIs that are not https (but on localhost), or that reach link-local, metadata or the admin listener', async () => {
    // The URI itself is malformed: invalid_request.
    await expectRefused(server, ['http://shop.example/logout', 'https://shop.example/logout#fragment', 'not a uri'], 'invalid_request');
    // Where it leads is refused: invalid_client_metadata (RFC 7591 §3.2.2).
    const refused = [
      'https://169.254.169.254/latest/meta-data',
      'https://[fe80::1]/logout',
      'https://[::ffff:169.254.169.254]/',
      'https://100.100.100.200/',
      'https://0.0.0.0/logout',
      'http://localhost:3999/admin/clients',
      'http://127.0.0.1:3999/admin/clients',
      'https://127.1.2.3/logout',
    ];
    await expectRefused(server, refused, 'invalid_client_metadata');
    const client = await server.createClient();
    const patched = await server.adminCall('PATCH', `/admin/clients/${client.client_id}`, { backchannel_logout_uri: 'https://169.254.169.254/' });
    expect(patched.statusCode).toBe(400);
    expect(patched.json.error_description).toMatch(/link-local/);

    for (const uri of ['https://shop.example/logout', 'http://localhost:8080/logout', 'http://127.0.0.1:8080/logout', 'http://[::1]:8080/logout']) {
      const res = await server.adminCall('PATCH', `/admin/clients/${client.client_id}`, { backchannel_logout_uri: uri });
      expect(res.statusCode, uri).toBe(200);
      expect(res.json.backchannel_logout_uri).toBe(uri);
    }
    const cleared = await server.adminCall('PATCH', `/admin/clients/${client.client_id}`, { backchannel_logout_uri: null });
    expect(cleared.json.backchannel_logout_uri).toBeNull();
  });

  it('refuses private, shared and unique-local addresses, IPv4-mapped ones too, at registration', async () => {
    const client = await server.createClient();
    for (const uri of PRIVATE_URIS) {
      const created = await registerWebsite(server, uri);
      expect(created.statusCode, uri).toBe(400);
      expect(created.json, uri).toEqual({
        error: 'invalid_client_metadata',
        error_description: expect.stringMatching(/private, shared or unique-local/),
      });
      const patched = await server.adminCall('PATCH', `/admin/clients/${client.client_id}`, { backchannel_logout_uri: uri });
      expect(patched.json.error, uri).toBe('invalid_client_metadata');
    }
    // Neighbours of those ranges are public addresses, and accepted.
    for (const uri of ['https://11.0.0.1/logout', 'https://172.32.0.1/logout', 'https://100.128.0.1/logout', 'https://[fe00::1]/logout']) {
      expect((await server.adminCall('PATCH', `/admin/clients/${client.client_id}`, { backchannel_logout_uri: uri })).statusCode, uri).toBe(200);
    }
  });

  it('refuses a host that resolves to a private address at delivery time', () => {
    const rules = { adminHost: '127.0.0.1', adminPort: 3999, logoutAllowPrivateNetworks: false };
    const url = new URL('https://intranet.shop.example/logout');
    for (const address of ['10.1.2.3', '172.20.0.9', '192.168.0.1', '100.64.1.1', 'fd12::1', '::ffff:10.1.2.3', '::ffff:a01:203']) {
      const resolved = [{ address, family: address.includes(':') ? 6 : 4 }];
      expect(addressProblem(url, resolved, rules), address).toMatch(/private/);
      expect(addressProblem(url, resolved, { ...rules, logoutAllowPrivateNetworks: true }), address).toBeUndefined();
    }
    // One private address among public ones is enough to refuse.
    expect(
      addressProblem(
        url,
        [
          { address: '93.184.216.34', family: 4 },
          { address: '10.0.0.1', family: 4 },
        ],
        rules,
      ),
    ).toMatch(/private/);
  });

  it('accepts private addresses with LOGOUT_ALLOW_PRIVATE_NETWORKS=true', async () => {
    const intranet = await startTestServer({ ID_TOKEN_SIGNING_ALG: 'RS256', LOGOUT_ALLOW_PRIVATE_NETWORKS: 'true' });
    try {
      for (const uri of PRIVATE_URIS) {
        expect((await registerWebsite(intranet, uri)).statusCode, uri).toBe(201);
      }
      // Link-local and metadata addresses stay refused.
      await expectRefused(intranet, ['https://169.254.169.254/'], 'invalid_client_metadata');
    } finally {
      await intranet.close();
    }
    // A second server starts: room for a busy machine.
  }, 90_000);

  it('needs OpenID Connect mode', async () => {
    const plain = await startTestServer();
    try {
      const res = await registerWebsite(plain, 'https://shop.example/logout');
      expect(res.statusCode).toBe(400);
      expect(res.json.error_description).toMatch(/ID_TOKEN_SIGNING_ALG/);
    } finally {
      await plain.close();
    }
  });
});
