import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase, usingPostgres } from './helpers/database.js';
import { within } from './helpers/poll.js';
import { type ServerProcess, startServerProcess } from './helpers/process.js';
import { ADMIN_TOKEN } from './helpers/server.js';

const ISSUER = 'https://auth.example';

// Several processes over one store is what PostgreSQL is for; the embedded store belongs to one process.
describe.runIf(usingPostgres)('two server processes over one PostgreSQL (postgres)', () => {
  let database: TestDatabase;
  let a: ServerProcess;
  let b: ServerProcess;

  beforeAll(async () => {
    database = await createTestDatabase();
    // No JWT_SECRET: both must find the one key the first start generated in the store.
    const env = {
      DATABASE_URL: database.url,
      ISSUER,
      ADMIN_TOKEN,
      PORT: '0',
      ADMIN_PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      DATA_DIR: 'memory',
    };
    a = await startServerProcess(env);
    b = await startServerProcess(env);
  }, 60_000);
  afterAll(async () => {
    for (const p of [a, b]) {
      p?.child.kill('SIGTERM');
      await p?.exit;
    }
    await database.drop();
  });

  const admin = (p: ServerProcess, path: string, body: unknown) =>
    fetch(`${p.adminUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then((r) => r.json());
  const form = (p: ServerProcess, path: string, body: Record<string, string>) =>
    fetch(`${p.url}${path}`, { method: 'POST', body: new URLSearchParams(body) });
  const userinfoStatus = async (p: ServerProcess, accessToken: string) =>
    (await fetch(`${p.url}/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } })).status;

  /**
   * Whether `p` refuses the access token at userinfo within a second: each instance keeps live
   * grants in memory and forgets one when the database announces its change (docs/operations.md).
   */
  const refusedWithinASecond = (p: ServerProcess, accessToken: string) => within(1000, async () => (await userinfoStatus(p, accessToken)) === 401);

  /** The sign-in page of `p` for `client`, with PKCE over `verifier`. */
  const authorizePage = (p: ServerProcess, client: { client_id: string }, verifier: string, redirectUri = 'https://shop.example/cb') => {
    const query = new URLSearchParams({
      client_id: client.client_id,
      redirect_uri: redirectUri,
      response_type: 'code',
      state: 'st-1',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    });
    return fetch(`${p.url}/authorize?${query}`);
  };

  /** The browser opens the sign-in page on A: the request id and the binding cookie. */
  async function openSignIn(client: { client_id: string }) {
    const verifier = randomBytes(32).toString('base64url');
    const page = await authorizePage(a, client, verifier);
    expect(page.status).toBe(200);
    const requestId = /<meta name="request-id" content="([^"]+)">/.exec(await page.text())![1];
    const cookie = page.headers.getSetCookie()[0].split(';')[0];
    return { requestId, cookie, verifier };
  }

  const authenticate = (p: ServerProcess, requestId: string, agent: { agent_id: string; agent_secret: string }) =>
    fetch(`${p.url}/api/agent/authenticate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret, model: 'model-x' }),
    });
  const complete = (p: ServerProcess, requestId: string, cookie: string) =>
    fetch(`${p.url}/authorize/complete?request_id=${requestId}`, { headers: { cookie }, redirect: 'manual' });
  const redeem = (p: ServerProcess, code: string, verifier: string, creds: { client_id: string; client_secret: string }) =>
    form(p, '/token', { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: 'https://shop.example/cb', ...creds });

  /** A sign-in whose every step lands on the other instance than the one before. */
  async function signInAcross(email: string) {
    const client = await admin(a, '/admin/clients', { name: 'Shop', redirect_uris: ['https://shop.example/cb'] });
    const agent = await admin(b, '/admin/agents', { email });
    const creds = { client_id: client.client_id, client_secret: client.client_secret };
    const { requestId, cookie, verifier } = await openSignIn(client);

    // A long poll held by A is woken by the agent authenticating on B.
    const started = Date.now();
    const poll = fetch(`${a.url}/api/check-status?request_id=${requestId}&wait=20`).then((r) => r.json());
    await new Promise((r) => setTimeout(r, 300));
    const auth = await authenticate(b, requestId, agent);
    expect(auth.status).toBe(200);
    expect(await poll).toEqual({ status: 'authenticated' });
    expect(Date.now() - started).toBeLessThan(5000);

    const done = await complete(b, requestId, cookie);
    expect(done.status).toBe(302);
    const callback = new URL(done.headers.get('location')!);
    expect(callback.searchParams.get('state')).toBe('st-1');
    expect(callback.searchParams.get('iss')).toBe(ISSUER);

    const tokens = await (await redeem(a, callback.searchParams.get('code')!, verifier, creds)).json();
    expect(tokens.token_type).toBe('Bearer');
    return { agent, creds, tokens };
  }

  it('completes a sign-in whose every step lands on the other instance', async () => {
    const { agent, creds, tokens } = await signInAcross('owner@example.com');
    const info = await fetch(`${b.url}/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(await info.json()).toEqual({ sub: agent.agent_id, email: 'owner@example.com' });

    const refreshed = await (await form(b, '/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...creds })).json();
    const introspection = await (await form(a, '/introspect', { token: refreshed.access_token, ...creds })).json();
    expect(introspection).toMatchObject({ active: true, sub: agent.agent_id, model: 'model-x' });

    // Revoked on A means refused on B, which had kept the grant in memory, within a second.
    expect(await userinfoStatus(b, refreshed.access_token)).toBe(200);
    expect((await form(a, '/revoke', { token: refreshed.refresh_token, ...creds })).status).toBe(200);
    expect(await refusedWithinASecond(b, refreshed.access_token)).toBe(true);
  }, 60_000);

  it('stops an agent everywhere within a second: revoked through one instance, refused by the other', async () => {
    const { agent, creds, tokens } = await signInAcross('kill-switch@example.com');
    // B has the grant in memory.
    expect(await userinfoStatus(b, tokens.access_token)).toBe(200);
    expect(await (await form(b, '/introspect', { token: tokens.access_token, ...creds })).json()).toMatchObject({ active: true });
    expect(await admin(a, `/admin/agents/${agent.agent_id}/revoke-grants`, {})).toEqual({ revoked: 1 });
    expect(await refusedWithinASecond(b, tokens.access_token)).toBe(true);
    expect(await (await form(b, '/introspect', { token: tokens.access_token, ...creds })).json()).toEqual({ active: false });
    const refresh = await form(b, '/token', { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, ...creds });
    expect(refresh.status).toBe(400);
    expect((await refresh.json()).error).toBe('invalid_grant');
  }, 60_000);

  it("holds an operator's edit of a website or an agent everywhere within a second, though each instance keeps their records", async () => {
    const client = await admin(a, '/admin/clients', { name: 'Shop', redirect_uris: ['https://shop.example/cb'] });
    const agent = await admin(b, '/admin/agents', { email: 'edited-website@example.com' });
    const creds = { client_id: client.client_id, client_secret: client.client_secret };
    const authorizeStatus = async (p: ServerProcess, redirectUri: string) =>
      (await authorizePage(p, client, randomBytes(32).toString('base64url'), redirectUri)).status;
    // B reads the record at /authorize and at /token, and keeps it.
    expect(await authorizeStatus(b, 'https://shop.example/cb')).toBe(200);
    const { requestId, cookie, verifier } = await openSignIn(client);
    expect((await authenticate(b, requestId, agent)).status).toBe(200);
    const code = new URL((await complete(a, requestId, cookie)).headers.get('location')!).searchParams.get('code')!;
    expect((await redeem(b, code, verifier, creds)).status).toBe(200);

    // Edited on A: B takes the new redirect URI and refuses the old one.
    const patched = await fetch(`${a.adminUrl}/admin/clients/${client.client_id}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: ['https://shop.example/new'] }),
    });
    expect(patched.status).toBe(200);
    expect(await within(1000, async () => (await authorizeStatus(b, 'https://shop.example/new')) === 200)).toBe(true);
    expect(await authorizeStatus(b, 'https://shop.example/cb')).toBe(400);

    // Its secret rotated on A: B refuses the old one.
    const rotated = await admin(a, `/admin/clients/${client.client_id}/secret`, {});
    const tokenStatus = async (secret: string) =>
      (await form(b, '/token', { grant_type: 'refresh_token', refresh_token: 'none', client_id: client.client_id, client_secret: secret })).status;
    expect(await within(1000, async () => (await tokenStatus(creds.client_secret)) === 401)).toBe(true);
    expect(await tokenStatus(rotated.client_secret)).toBe(400);

    // The agent's secret rotated on A: B, which kept the agent's record when it authenticated, refuses the old one.
    const unchanged = await admin(a, '/admin/clients', { name: 'Other shop', redirect_uris: ['https://shop.example/cb'] });
    const agentRotated = await admin(a, `/admin/agents/${agent.agent_id}/secret`, { revoke_grants: false });
    const authenticatesOnB = async (secret: string) =>
      (await authenticate(b, (await openSignIn(unchanged)).requestId, { ...agent, agent_secret: secret })).status;
    expect(await within(1000, async () => (await authenticatesOnB(agent.agent_secret)) === 401)).toBe(true);
    expect(await authenticatesOnB(agentRotated.agent_secret)).toBe(200);
  }, 60_000);

  it('ends the sign-ins in flight with it: a code and an authenticated request from before the switch yield nothing after', async () => {
    const client = await admin(a, '/admin/clients', { name: 'Shop', redirect_uris: ['https://shop.example/cb'] });
    const agent = await admin(b, '/admin/agents', { email: 'in-flight@example.com' });
    const creds = { client_id: client.client_id, client_secret: client.client_secret };
    const withCode = await openSignIn(client);
    expect((await authenticate(b, withCode.requestId, agent)).status).toBe(200);
    const code = new URL((await complete(b, withCode.requestId, withCode.cookie)).headers.get('location')!).searchParams.get('code')!;
    const authenticated = await openSignIn(client);
    expect((await authenticate(b, authenticated.requestId, agent)).status).toBe(200);

    expect(await admin(b, `/admin/agents/${agent.agent_id}/revoke-grants`, {})).toEqual({ revoked: 0 });
    const token = await redeem(a, code, withCode.verifier, creds);
    expect(token.status).toBe(400);
    expect((await token.json()).error).toBe('invalid_grant');
    const done = await complete(a, authenticated.requestId, authenticated.cookie);
    expect(done.status).toBe(400);
    expect(done.headers.get('location')).toBeNull();
    const status = await (await fetch(`${a.url}/api/check-status?request_id=${authenticated.requestId}`)).json();
    expect(status).toMatchObject({ status: 'error', error: 'access_denied' });
  }, 60_000);
});
