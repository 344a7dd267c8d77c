import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GrantCache } from '../../src/cache/grant-cache.js';
import { createMetrics } from '../../src/metrics.js';
import { grantIdOf } from '../../src/oauth/access-token.js';
import type { LiveGrant } from '../../src/store/grants.js';
import { type Credentials, introspect, issueTokens, postForm, refresh, revoke, userinfo } from '../helpers/codes.js';
import { storeName, usingPostgres } from '../helpers/database.js';
import { agentAuthenticate, startAuthorize } from '../helpers/flow.js';
import { within } from '../helpers/poll.js';
import { startSecondInstance, startTestServer, type TestServer } from '../helpers/server.js';

type Result = 'hit' | 'miss' | 'bypass';

/** The grant cache's read counters of one instance, from its /metrics. */
async function cacheReads(server: TestServer): Promise<Record<Result, number>> {
  const text = (await server.admin.inject({ url: '/metrics' })).body;
  const count = (result: Result) =>
    Number(new RegExp(`^agent_auth_grant_cache_reads_total\\{result="${result}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { hit: count('hit'), miss: count('miss'), bypass: count('bypass') };
}

/** How the counters moved while `fn` ran. */
async function readsDuring(server: TestServer, fn: () => Promise<unknown>): Promise<Record<Result, number>> {
  const before = await cacheReads(server);
  await fn();
  const after = await cacheReads(server);
  return { hit: after.hit - before.hit, miss: after.miss - before.miss, bypass: after.bypass - before.bypass };
}

const grantOf = (accessToken: string) => grantIdOf(decodeJwt(accessToken).jti as string);

/** Userinfo status and introspection answer of one access token, on one instance. */
async function standing(server: TestServer, client: Credentials, accessToken: string) {
  const info = await userinfo(server, accessToken);
  const introspection = await introspect(server, client, accessToken);
  return { userinfo: info.statusCode, active: introspection.statusCode === 200 ? introspection.json().active : introspection.statusCode };
}

describe(`grant cache (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    // Reuse detection at once: a second presentation of a spent refresh token is theft, not a retry.
    server = await startTestServer({ REFRESH_TOKEN_REUSE_INTERVAL_SECONDS: '0' });
  });
  afterAll(() => server.close());

  /** A fresh sign-in whose grant the cache holds (read once by userinfo and once by introspection). */
  async function cachedTokens() {
    const tokens = await issueTokens(server, { scope: 'openid email' });
    expect(await standing(server, tokens.client, tokens.access_token)).toEqual({ userinfo: 200, active: true });
    return tokens;
  }

  it('serves userinfo and introspection from memory after the first read', async () => {
    const { client, agent, access_token } = await issueTokens(server, { scope: 'openid email' });
    const first = await readsDuring(server, async () => {
      // The code exchange kept the grant it created: the website's first userinfo reads nothing.
      expect((await userinfo(server, access_token)).json()).toEqual({ sub: agent.agent_id, email: agent.email });
      // The asking client is not kept yet: one read, of the client and the grant together.
      expect((await introspect(server, client, access_token)).json()).toMatchObject({ active: true, sub: agent.agent_id });
    });
    expect(first).toEqual({ hit: 1, miss: 1, bypass: 0 });

    const then = await readsDuring(server, async () => {
      for (let i = 0; i < 3; i++) {
        expect((await userinfo(server, access_token)).json()).toEqual({ sub: agent.agent_id, email: agent.email });
        expect((await introspect(server, client, access_token)).json()).toMatchObject({ active: true, sub: agent.agent_id });
      }
    });
    expect(then).toEqual({ hit: 6, miss: 0, bypass: 0 });
  });

  it("keeps a website's record for /authorize and /token, and forgets it with an operator's edit before the edit returns", async () => {
    const client = await server.createClient(['https://shop.example/cb']);
    expect((await startAuthorize(server, client)).res.statusCode).toBe(200);
    expect(await readsDuring(server, () => startAuthorize(server, client))).toEqual({ hit: 1, miss: 0, bypass: 0 });
    const tokenCall = (secret: string) =>
      postForm(server, '/token', { grant_type: 'refresh_token', refresh_token: 'none', client_id: client.client_id, client_secret: secret });
    expect(await readsDuring(server, async () => expect((await tokenCall(client.client_secret)).statusCode).toBe(400))).toEqual({
      hit: 1,
      miss: 0,
      bypass: 0,
    });

    const patched = await server.adminCall('PATCH', `/admin/clients/${client.client_id}`, { redirect_uris: ['https://shop.example/new'] });
    expect(patched.statusCode).toBe(200);
    expect((await startAuthorize(server, client)).res.statusCode).toBe(400);
    expect((await startAuthorize(server, { ...client, redirect_uris: ['https://shop.example/new'] })).res.statusCode).toBe(200);

    const rotated = await server.adminCall('POST', `/admin/clients/${client.client_id}/secret`, {});
    expect((await tokenCall(client.client_secret)).statusCode).toBe(401);
    expect((await tokenCall(rotated.json.client_secret)).statusCode).toBe(400);
  });

  it("keeps an agent's record for its authentication, and forgets it with a rotated secret or a deactivation before either returns", async () => {
    const client = await server.createClient(['https://shop.example/cb']);
    const agent = await server.createAgent();
    const authenticate = async (secret: string) => {
      const { requestId } = await startAuthorize(server, client);
      return (await agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: secret })).statusCode;
    };
    expect(await authenticate(agent.agent_secret)).toBe(200);
    const kept = await readsDuring(server, async () => expect(await authenticate(agent.agent_secret)).toBe(200));
    // The website's record and the agent's, both from memory.
    expect(kept).toEqual({ hit: 2, miss: 0, bypass: 0 });

    const rotated = await server.adminCall('POST', `/admin/agents/${agent.agent_id}/secret`, { revoke_grants: false });
    expect(rotated.statusCode).toBe(200);
    expect(await authenticate(agent.agent_secret)).toBe(401);
    expect(await authenticate(rotated.json.agent_secret)).toBe(200);

    expect((await server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { active: false })).statusCode).toBe(200);
    expect(await authenticate(rotated.json.agent_secret)).not.toBe(200);
  });

  it('still refuses a wrong client secret, another client and a forged token when the grant is kept', async () => {
    const { client, access_token } = await cachedTokens();
    const other = await server.createClient();
    expect((await introspect(server, { ...client, client_secret: `${client.client_secret}x` }, access_token)).statusCode).toBe(401);
    expect((await introspect(server, other, access_token)).json()).toEqual({ active: false });
    const [header, payload, signature] = access_token.split('.');
    const forged = `${header}.${payload}.${signature.slice(0, -2)}${signature.endsWith('AA') ? 'BA' : 'AA'}`;
    expect((await userinfo(server, forged)).statusCode).toBe(401);
    expect((await introspect(server, client, forged)).json()).toEqual({ active: false });
  });

  it.each([
    {
      path: 'the admin API (one grant)',
      cut: async (t: Awaited<ReturnType<typeof cachedTokens>>) =>
        expect((await server.adminCall('POST', `/admin/grants/${grantOf(t.access_token)}/revoke`)).json).toEqual({ revoked: 1 }),
    },
    {
      path: 'the kill switch',
      cut: async (t: Awaited<ReturnType<typeof cachedTokens>>) =>
        expect((await server.adminCall('POST', `/admin/agents/${t.agent.agent_id}/revoke-grants`)).json).toEqual({ revoked: 1 }),
    },
    {
      path: 'refresh token reuse',
      cut: async (t: Awaited<ReturnType<typeof cachedTokens>>) => {
        expect((await refresh(server, t.client, t.refresh_token)).statusCode).toBe(200);
        const reuse = await refresh(server, t.client, t.refresh_token);
        expect(reuse.json().error).toBe('invalid_grant');
      },
    },
    {
      path: 'revocation of the access token (RFC 7009)',
      cut: async (t: Awaited<ReturnType<typeof cachedTokens>>) => expect((await revoke(server, t.client, t.access_token)).statusCode).toBe(200),
    },
    {
      path: 'revocation of the refresh token (RFC 7009)',
      cut: async (t: Awaited<ReturnType<typeof cachedTokens>>) => expect((await revoke(server, t.client, t.refresh_token)).statusCode).toBe(200),
    },
    {
      path: 'deactivation of the agent',
      cut: async (t: Awaited<ReturnType<typeof cachedTokens>>) =>
        expect((await server.adminCall('PATCH', `/admin/agents/${t.agent.agent_id}`, { active: false })).statusCode).toBe(200),
    },
    {
      path: 'deletion of the agent',
      cut: async (t: Awaited<ReturnType<typeof cachedTokens>>) =>
        expect((await server.adminCall('DELETE', `/admin/agents/${t.agent.agent_id}`)).statusCode).toBe(204),
    },
    {
      path: 'an UPDATE by hand',
      cut: (t: Awaited<ReturnType<typeof cachedTokens>>) =>
        server.services.db.query(`UPDATE grants SET revoked_at = now(), revoked_reason = 'admin_grant' WHERE id = $1`, [grantOf(t.access_token)]),
    },
    {
      path: 'a DELETE by hand',
      cut: (t: Awaited<ReturnType<typeof cachedTokens>>) => server.services.db.query(`DELETE FROM grants WHERE id = $1`, [grantOf(t.access_token)]),
    },
  ])('ends the tokens at once on this instance after $path', async ({ cut }) => {
    const tokens = await cachedTokens();
    await cut(tokens);
    expect(await standing(server, tokens.client, tokens.access_token)).toEqual({ userinfo: 401, active: false });
  });

  it('refuses a deactivated client at once: userinfo 401, introspection invalid_client', async () => {
    const { client, access_token } = await cachedTokens();
    expect((await server.adminCall('PATCH', `/admin/clients/${client.client_id}`, { active: false })).statusCode).toBe(200);
    expect(await standing(server, client, access_token)).toEqual({ userinfo: 401, active: 401 });
  });

  it('refuses the old client secret at once after a rotation', async () => {
    const { client, access_token } = await cachedTokens();
    // Grants kept, so that only the secret changes under the cached client.
    const rotated = await server.adminCall('POST', `/admin/clients/${client.client_id}/secret`, { revoke_grants: false });
    expect((await introspect(server, client, access_token)).statusCode).toBe(401);
    expect((await introspect(server, { ...client, client_secret: rotated.json.client_secret }, access_token)).json().active).toBe(true);
  });

  it("serves the user's new email at once", async () => {
    const { client, agent, access_token } = await cachedTokens();
    await server.services.db.query(`UPDATE users SET email = $2 WHERE id = (SELECT user_id FROM agents WHERE id = $1)`, [
      agent.agent_id,
      `renamed-${agent.email}`,
    ]);
    expect((await userinfo(server, access_token)).json()).toEqual({ sub: agent.agent_id, email: `renamed-${agent.email}` });
    expect((await introspect(server, client, access_token)).json().active).toBe(true);
  });

  it('lets the other tokens of a grant live when one access token is revoked', async () => {
    const tokens = await cachedTokens();
    const next = (await refresh(server, tokens.client, tokens.refresh_token)).json();
    expect((await revoke(server, tokens.client, tokens.access_token)).statusCode).toBe(200);
    expect(await standing(server, tokens.client, tokens.access_token)).toEqual({ userinfo: 401, active: false });
    expect(await standing(server, tokens.client, next.access_token)).toEqual({ userinfo: 200, active: true });
  });

  it('another instance obeys a kill switch pulled through this one within a second', async () => {
    const b = await startSecondInstance(server);
    try {
      const tokens = await cachedTokens();
      expect(await standing(b, tokens.client, tokens.access_token)).toEqual({ userinfo: 200, active: true });
      const kept = await readsDuring(b, () => standing(b, tokens.client, tokens.access_token));
      expect(kept.hit).toBe(2);

      expect((await server.adminCall('POST', `/admin/agents/${tokens.agent.agent_id}/revoke-grants`)).json).toEqual({ revoked: 1 });
      expect(await within(1000, async () => (await standing(b, tokens.client, tokens.access_token)).userinfo === 401)).toBe(true);
      expect(await standing(b, tokens.client, tokens.access_token)).toEqual({ userinfo: 401, active: false });
      expect((await refresh(b, tokens.client, tokens.refresh_token)).json().error).toBe('invalid_grant');
    } finally {
      await b.close();
    }
  });
});

describe(`grant cache: a notification while a read is under way (${storeName})`, () => {
  let server: TestServer;
  let cache: GrantCache<LiveGrant>;
  beforeAll(async () => {
    server = await startTestServer();
    cache = new GrantCache(10, createMetrics(), 10_000);
    await cache.listen(server.services.db);
  });
  afterAll(() => server.close());

  const found: LiveGrant = {
    client_id: 'client_1',
    agent_id: 'agent_1',
    user_id: 'user_1',
    email: 'someone@example.com',
    expires_at_ms: Date.now() + 3_600_000,
    revoked_jtis: [],
    dpop_nonce_required: false,
  };

  /** A read of grant `id` whose load from the store finishes with `loaded` only after `meanwhile` has run. */
  async function readAround(id: string, loaded: LiveGrant, meanwhile: () => Promise<unknown>) {
    let finish!: (grant: LiveGrant) => void;
    const reading = cache.read(
      () => cache.grant(id),
      () => new Promise<LiveGrant>((resolve) => (finish = resolve)),
      (grant, since) => cache.keepGrant(id, grant, since),
    );
    await meanwhile();
    finish(loaded);
    return reading;
  }
  const announce = (payload: string) => server.services.db.query(`SELECT pg_notify('agent_auth_grant_cache', $1)`, [payload]);

  it.each(['grant:g1', 'agent:agent_1', 'user:user_1', 'client:client_1'])('does not keep what it found after "%s"', async (payload) => {
    expect(await readAround('g1', found, () => announce(payload))).toEqual(found);
    expect(cache.grant('g1')).toBeUndefined();
  });

  it('keeps what it found when the notifications were about others', async () => {
    // Ids of its own: the listening connection may still be delivering the announcements above.
    const other = { ...found, client_id: 'client_2', agent_id: 'agent_2', user_id: 'user_2' };
    const announcements = () => Promise.all([announce('grant:g3'), announce('agent:agent_3'), announce('client:client_3')]);
    expect(await readAround('g2', other, announcements)).toEqual(other);
    expect(cache.grant('g2')).toEqual(other);
  });
});

describe('grant cache size', () => {
  let server: TestServer;
  afterAll(() => server?.close());

  it('keeps at most GRANT_CACHE_SIZE grants, the least recently used going first', async () => {
    server = await startTestServer({ GRANT_CACHE_SIZE: '2' });
    const [a, b, c] = [await issueTokens(server), await issueTokens(server), await issueTokens(server)];
    const read = (t: { access_token: string }) => readsDuring(server, () => userinfo(server, t.access_token));
    expect(await read(a)).toMatchObject({ miss: 1 });
    expect(await read(b)).toMatchObject({ miss: 1 });
    expect(await read(a)).toMatchObject({ hit: 1 });
    expect(await read(c)).toMatchObject({ miss: 1 });
    expect(await read(b)).toMatchObject({ miss: 1 });
    expect(await read(c)).toMatchObject({ hit: 1 });
  });

  it('reads an entry again once it is GRANT_CACHE_MAX_AGE_SECONDS old, notification or not', async () => {
    await server.close();
    server = await startTestServer({ GRANT_CACHE_MAX_AGE_SECONDS: '1' });
    const tokens = await issueTokens(server);
    const read = () => readsDuring(server, () => userinfo(server, tokens.access_token));
    // Kept since the code exchange.
    expect(await read()).toMatchObject({ hit: 1 });
    await new Promise((r) => setTimeout(r, 1100));
    expect(await read()).toMatchObject({ miss: 1, hit: 0 });
  });

  it('is off with GRANT_CACHE_SIZE=0: every read goes to the store', async () => {
    await server.close();
    server = await startTestServer({ GRANT_CACHE_SIZE: '0' });
    const tokens = await issueTokens(server);
    expect(await readsDuring(server, () => standing(server, tokens.client, tokens.access_token))).toEqual({ hit: 0, miss: 0, bypass: 2 });
    expect(await readsDuring(server, () => standing(server, tokens.client, tokens.access_token))).toEqual({ hit: 0, miss: 0, bypass: 2 });
  });
});

// Two instances with a connection each to listen on are what PostgreSQL is for.
describe.runIf(usingPostgres)('grant cache with a lost listening connection (postgres)', () => {
  let a: TestServer;
  let b: TestServer;
  // Names instance B's connections, so that the test can find B's listening one among all.
  const applicationName = `grant-cache-b-${process.pid}-${Date.now()}`;
  beforeAll(async () => {
    a = await startTestServer();
    const url = new URL(a.databaseUrl!);
    url.searchParams.set('application_name', applicationName);
    b = await startSecondInstance({ ...a, databaseUrl: url.toString() });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('reads through while it is down, and serves from memory again, emptied, once it is back', async () => {
    const tokens = await issueTokens(a, { scope: 'email' });
    const other = await issueTokens(a, { scope: 'email' });
    for (const t of [tokens, other]) expect(await standing(b, t.client, t.access_token)).toEqual({ userinfo: 200, active: true });

    const { rows } = await a.services.db.query<{ killed: boolean }>(
      `SELECT pg_terminate_backend(pid) AS killed FROM pg_stat_activity WHERE application_name = $1 AND (query LIKE 'LISTEN%' OR query LIKE '%agent_auth_listener_heartbeat')`,
      [applicationName],
    );
    expect(rows).toEqual([{ killed: true }]);
    expect((await a.adminCall('POST', `/admin/agents/${tokens.agent.agent_id}/revoke-grants`)).json).toEqual({ revoked: 1 });

    const down = await readsDuring(b, async () => {
      expect(await within(1000, async () => (await standing(b, tokens.client, tokens.access_token)).userinfo === 401)).toBe(true);
      expect(await standing(b, tokens.client, tokens.access_token)).toEqual({ userinfo: 401, active: false });
      expect((await refresh(b, tokens.client, tokens.refresh_token)).json().error).toBe('invalid_grant');
    });
    expect(down.bypass).toBeGreaterThan(0);

    // Back within seconds (it reconnects after one), and what it kept before is gone: a miss first.
    let firstBack: Record<Result, number> | undefined;
    const isBack = async () => {
      firstBack = await readsDuring(b, () => userinfo(b, other.access_token));
      return firstBack.bypass === 0;
    };
    expect(await within(10_000, isBack)).toBe(true);
    expect(firstBack).toEqual({ hit: 0, miss: 1, bypass: 0 });
    const back = await readsDuring(b, async () => {
      await userinfo(b, other.access_token);
      await userinfo(b, other.access_token);
    });
    expect(back).toEqual({ hit: 2, miss: 0, bypass: 0 });
    expect(await standing(b, tokens.client, tokens.access_token)).toEqual({ userinfo: 401, active: false });
  }, 30_000);
});
