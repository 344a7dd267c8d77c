import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchangeCode, introspect, refresh, userinfo } from '../helpers/codes.js';
import { storeName, usingPostgres } from '../helpers/database.js';
import { signInToCode } from '../helpers/flow.js';
import { within } from '../helpers/poll.js';
import { closeAll, startTwoInstances, type TestServer } from '../helpers/server.js';

type Client = { client_id: string; client_secret: string; redirect_uris: string[] };
type Agent = { agent_id: string; agent_secret: string; email: string };
type Tokens = { access_token: string; refresh_token: string };

// On PostgreSQL the second instance has its own pool and services over the same schema; PGlite
// cannot be opened twice, so there it is a second pair of apps over the same database.
describe(`agent owners: sign-in history and revocation (${storeName}, two instances${usingPostgres ? '' : ' over one PGlite'})`, () => {
  let server: TestServer;
  let second: TestServer;
  beforeAll(async () => ({ server, second } = await startTwoInstances()));
  afterAll(() => closeAll(second, server));

  let seq = 0;
  async function createClient(name: string): Promise<Client> {
    const res = await server.adminCall('POST', '/admin/clients', { name, redirect_uris: [`https://site${++seq}.example/cb`] });
    expect(res.statusCode).toBe(201);
    return res.json;
  }
  const email = () => `owner-${++seq}-${Math.random().toString(36).slice(2)}@example.com`;

  /** A whole browser sign-in, then the code exchange on the other instance (a sign-in hops between instances). */
  async function signIn(client: Client, agent: Agent, model = 'test-model-1'): Promise<Tokens> {
    const { code, verifier } = await signInToCode(server, { client, agent, model });
    const res = await exchangeCode(second, client, code, verifier);
    expect(res.statusCode, res.body).toBe(200);
    return res.json();
  }

  /** Refresh works, introspection says active and userinfo answers, on `instance`. */
  async function expectLive(instance: TestServer, client: Client, tokens: Tokens) {
    expect((await userinfo(instance, tokens.access_token)).statusCode).toBe(200);
    expect((await introspect(instance, client, tokens.access_token)).json().active).toBe(true);
    expect((await introspect(instance, client, tokens.refresh_token)).json().active).toBe(true);
  }

  /** Revoked: userinfo 401, introspection inactive for both tokens, refresh invalid_grant; on `instance`. */
  async function expectRevoked(instance: TestServer, client: Client, tokens: Tokens) {
    const info = await userinfo(instance, tokens.access_token);
    expect(info.statusCode).toBe(401);
    expect(info.headers['www-authenticate']).toContain('error="invalid_token"');
    expect((await introspect(instance, client, tokens.access_token)).json()).toEqual({ active: false });
    expect((await introspect(instance, client, tokens.refresh_token)).json()).toEqual({ active: false });
    const refreshed = await refresh(instance, client, tokens.refresh_token);
    expect(refreshed.statusCode).toBe(400);
    expect(refreshed.json().error).toBe('invalid_grant');
  }

  /**
   * Waits (at most a second) for userinfo on `instance` to refuse the token: another instance
   * forgets a grant it keeps in memory when the database's notification reaches it
   * (docs/operations.md, "Grant cache"); the instance that revoked forgets it at once.
   */
  const refusedWithinASecond = (instance: TestServer, accessToken: string) =>
    within(1000, async () => (await userinfo(instance, accessToken)).statusCode === 401);

  /** Revokes through the first instance's admin API and checks the outcome on both instances. */
  async function revokeAndCheck(url: string, payload: unknown, expected: number, dead: [Client, Tokens][], alive: [Client, Tokens][]) {
    for (const [client, tokens] of [...dead, ...alive]) await expectLive(second, client, tokens);
    const res = await server.adminCall('POST', url, payload);
    expect(res.statusCode, JSON.stringify(res.json)).toBe(200);
    expect(res.json).toEqual({ revoked: expected });
    for (const [, tokens] of dead) await refusedWithinASecond(second, tokens.access_token);
    for (const instance of [second, server]) {
      for (const [client, tokens] of dead) await expectRevoked(instance, client, tokens);
      for (const [client, tokens] of alive) await expectLive(instance, client, tokens);
    }
    // Revoking again finds nothing left to revoke.
    expect((await server.adminCall('POST', url, payload)).json).toEqual({ revoked: 0 });
  }

  describe('listings', () => {
    it("lists an agent's grants, a user's agents and grants, and a website's active agents", async () => {
      const shop = await createClient('Shop');
      const news = await createClient('News');
      const owner = email();
      const agentA = await server.createAgent(owner);
      const agentB = await server.createAgent(owner);

      const atShop = await signIn(shop, agentA, 'model-a1');
      await signIn(news, agentA, 'model-a2');
      await signIn(shop, agentB, 'model-b');
      const rotated = await refresh(second, shop, atShop.refresh_token);
      expect(rotated.statusCode).toBe(200);

      const ofAgent = await server.adminCall('GET', `/admin/agents/${agentA.agent_id}/grants`);
      expect(ofAgent.statusCode).toBe(200);
      expect(ofAgent.json.agent_id).toBe(agentA.agent_id);
      // newest first: the News sign-in came after the Shop one
      expect(ofAgent.json.grants.map((g: { client_name: string }) => g.client_name)).toEqual(['News', 'Shop']);
      const [newsGrant, shopGrant] = ofAgent.json.grants;
      expect(Object.keys(shopGrant).sort()).toEqual(
        [
          'active',
          'agent_id',
          'client_id',
          'client_name',
          'created_at',
          'email',
          'expires_at',
          'grant_id',
          'last_refreshed_at',
          'model',
          'revoked_at',
          'revoked_reason',
          'scope',
        ].sort(),
      );
      expect(shopGrant).toMatchObject({
        agent_id: agentA.agent_id,
        email: agentA.email,
        client_id: shop.client_id,
        client_name: 'Shop',
        scope: 'openid email profile',
        model: 'model-a1',
        active: true,
        revoked_at: null,
        revoked_reason: null,
      });
      expect(shopGrant.grant_id).toMatch(/^grant_/);
      expect(new Date(shopGrant.last_refreshed_at).getTime()).toBeGreaterThanOrEqual(new Date(shopGrant.created_at).getTime());
      expect(newsGrant).toMatchObject({ client_id: news.client_id, model: 'model-a2', last_refreshed_at: null, active: true });
      // the access token names its grant in its jti
      expect(String(decodeJwt(atShop.access_token).jti).split('.')[0]).toBe(shopGrant.grant_id);

      // by email, whatever its case
      const ofUser = await server.adminCall('GET', `/admin/users?email=${encodeURIComponent(owner.toUpperCase())}`);
      expect(ofUser.statusCode).toBe(200);
      expect(ofUser.json.email).toBe(owner);
      expect(ofUser.json.agents.map((a: { agent_id: string }) => a.agent_id)).toEqual([agentA.agent_id, agentB.agent_id]);
      expect(ofUser.json.agents[0]).toMatchObject({ email: owner, name: 'Test agent', active: true });
      // No secret value (secret_enabled, a flag, may be there).
      expect(JSON.stringify(ofUser.json)).not.toMatch(/secret(_hash)?"\s*:\s*"/);
      expect(ofUser.json.grants).toHaveLength(3);
      expect(new Set(ofUser.json.grants.map((g: { model: string }) => g.model))).toEqual(new Set(['model-a1', 'model-a2', 'model-b']));

      const atShopNow = await second.adminCall('GET', `/admin/clients/${shop.client_id}/agents`);
      expect(atShopNow.statusCode).toBe(200);
      expect(atShopNow.json.client_id).toBe(shop.client_id);
      const byId = Object.fromEntries(atShopNow.json.agents.map((a: { agent_id: string }) => [a.agent_id, a]));
      expect(Object.keys(byId).sort()).toEqual([agentA.agent_id, agentB.agent_id].sort());
      expect(byId[agentA.agent_id]).toMatchObject({ email: owner, name: 'Test agent', models: ['model-a1'], grants: 1 });
      expect(byId[agentB.agent_id]).toMatchObject({ models: ['model-b'], grants: 1 });
      // A's last activity is its refresh, after B signed in: most recently active first
      expect(atShopNow.json.agents[0].agent_id).toBe(agentA.agent_id);
      expect(byId[agentA.agent_id].last_active_at).toBe(shopGrant.last_refreshed_at);

      // a website without sign-ins has no agents
      const empty = await createClient('Empty');
      expect((await server.adminCall('GET', `/admin/clients/${empty.client_id}/agents`)).json).toEqual({
        client_id: empty.client_id,
        agents: [],
      });
    });

    it('answers 404 for unknown agents, users and clients, and 400 for a malformed email', async () => {
      for (const url of ['/admin/agents/agent_nope/grants', '/admin/users?email=nobody%40example.com', '/admin/clients/client_nope/agents']) {
        const res = await server.adminCall('GET', url);
        expect(res.statusCode, url).toBe(404);
        expect(res.json.error).toBe('not_found');
      }
      expect((await server.adminCall('GET', '/admin/users?email=nobody%40example.com')).json.error_description).toBe(
        'no user with email nobody@example.com',
      );
      for (const url of ['/admin/users', '/admin/users?email=not-an-email']) {
        const res = await server.adminCall('GET', url);
        expect(res.statusCode, url).toBe(400);
        expect(res.json.error).toBe('invalid_request');
      }
    });

    it('needs the admin token', async () => {
      const res = await server.admin.inject({ url: '/admin/audit' });
      expect(res.statusCode).toBe(401);
      const revoke = await server.admin.inject({ method: 'POST', url: '/admin/agents/x/revoke-grants' });
      expect(revoke.statusCode).toBe(401);
    });
  });

  describe('revocation at every level, seen on both instances within a second', () => {
    it('one grant: that website loses the agent, the other keeps it', async () => {
      const [shop, news] = [await createClient('Shop'), await createClient('News')];
      const agent = await server.createAgent(email());
      const atShop = await signIn(shop, agent);
      const atNews = await signIn(news, agent);
      const grants = (await server.adminCall('GET', `/admin/agents/${agent.agent_id}/grants`)).json.grants;
      const shopGrant = grants.find((g: { client_id: string }) => g.client_id === shop.client_id);

      await revokeAndCheck(`/admin/grants/${shopGrant.grant_id}/revoke`, undefined, 1, [[shop, atShop]], [[news, atNews]]);

      const after = (await second.adminCall('GET', `/admin/agents/${agent.agent_id}/grants`)).json.grants;
      const revoked = after.find((g: { grant_id: string }) => g.grant_id === shopGrant.grant_id);
      expect(revoked).toMatchObject({ active: false, revoked_reason: 'admin_grant' });
      expect(revoked.revoked_at).not.toBeNull();
      expect((await server.adminCall('GET', `/admin/clients/${shop.client_id}/agents`)).json.agents).toEqual([]);
    });

    it("all grants of an agent (the kill switch): every website loses it, the owner's other agent stays", async () => {
      const [shop, news] = [await createClient('Shop'), await createClient('News')];
      const owner = email();
      const agent = await server.createAgent(owner);
      const sibling = await server.createAgent(owner);
      const a1 = await signIn(shop, agent);
      const a2 = await signIn(news, agent);
      const s1 = await signIn(shop, sibling);

      await revokeAndCheck(
        `/admin/agents/${agent.agent_id}/revoke-grants`,
        undefined,
        2,
        [
          [shop, a1],
          [news, a2],
        ],
        [[shop, s1]],
      );

      const grants = (await server.adminCall('GET', `/admin/agents/${agent.agent_id}/grants`)).json.grants;
      expect(grants.map((g: { revoked_reason: string }) => g.revoked_reason)).toEqual(['admin_agent', 'admin_agent']);
      // The agent itself stays active: it can sign in again, as a new grant.
      const again = await signIn(shop, agent);
      await expectLive(second, shop, again);
    });

    it('all agents of a user, by email in any case; another user is untouched', async () => {
      const shop = await createClient('Shop');
      const owner = email();
      const [agentA, agentB] = [await server.createAgent(owner), await server.createAgent(owner)];
      const stranger = await server.createAgent(email());
      const a = await signIn(shop, agentA);
      const b = await signIn(shop, agentB);
      const other = await signIn(shop, stranger);

      await revokeAndCheck(
        '/admin/users/revoke-grants',
        { email: owner.toUpperCase() },
        2,
        [
          [shop, a],
          [shop, b],
        ],
        [[shop, other]],
      );

      const user = (await server.adminCall('GET', `/admin/users?email=${encodeURIComponent(owner)}`)).json;
      expect(user.grants.map((g: { revoked_reason: string }) => g.revoked_reason)).toEqual(['admin_user', 'admin_user']);
    });

    it('everything a website holds; the same agents elsewhere keep working', async () => {
      const [shop, news] = [await createClient('Shop'), await createClient('News')];
      const [agentA, agentB] = [await server.createAgent(email()), await server.createAgent(email())];
      const a = await signIn(shop, agentA);
      const b = await signIn(shop, agentB, 'other-model');
      const elsewhere = await signIn(news, agentA);

      await revokeAndCheck(
        `/admin/clients/${shop.client_id}/revoke-grants`,
        undefined,
        2,
        [
          [shop, a],
          [shop, b],
        ],
        [[news, elsewhere]],
      );

      expect((await server.adminCall('GET', `/admin/clients/${shop.client_id}/agents`)).json.agents).toEqual([]);
      expect((await server.adminCall('GET', `/admin/clients/${news.client_id}/agents`)).json.agents).toHaveLength(1);
    });

    it('answers 404 for what does not exist and 400 for a malformed body', async () => {
      for (const [url, payload, message] of [
        ['/admin/grants/grant_nope/revoke', undefined, 'no grant with id grant_nope'],
        ['/admin/agents/agent_nope/revoke-grants', undefined, 'no agent with id agent_nope'],
        ['/admin/users/revoke-grants', { email: 'nobody@example.com' }, 'no user with email nobody@example.com'],
        ['/admin/clients/client_nope/revoke-grants', undefined, 'no client with id client_nope'],
      ] as const) {
        const res = await server.adminCall('POST', url, payload);
        expect(res.statusCode, url).toBe(404);
        expect(res.json).toEqual({ error: 'not_found', error_description: message });
      }
      for (const payload of [{}, { email: 'nope' }, { email: 'a@example.com', extra: 1 }]) {
        const res = await server.adminCall('POST', '/admin/users/revoke-grants', payload);
        expect(res.statusCode, JSON.stringify(payload)).toBe(400);
        expect(res.json.error).toBe('invalid_request');
      }
    });
  });

  describe('the model on record', () => {
    it('keeps each sign-in with another model as its own grant, carried by its tokens and shown by introspection', async () => {
      const shop = await createClient('Shop');
      const agent = await server.createAgent(email());
      const first = await signIn(shop, agent, 'claude-opus-4');
      const other = await signIn(shop, agent, 'gpt-5');

      expect(decodeJwt(first.access_token).model).toBe('claude-opus-4');
      expect(decodeJwt(other.access_token).model).toBe('gpt-5');
      for (const [tokens, model] of [
        [first, 'claude-opus-4'],
        [other, 'gpt-5'],
      ] as const) {
        expect((await introspect(second, shop, tokens.access_token)).json()).toMatchObject({ active: true, model });
        expect((await introspect(server, shop, tokens.refresh_token)).json()).toMatchObject({ active: true, model });
        // refreshing keeps the model of the grant
        const refreshed = (await refresh(second, shop, tokens.refresh_token)).json();
        expect(decodeJwt(refreshed.access_token).model).toBe(model);
      }

      const grants = (await server.adminCall('GET', `/admin/agents/${agent.agent_id}/grants`)).json.grants;
      expect(grants.map((g: { model: string }) => g.model)).toEqual(['gpt-5', 'claude-opus-4']);
      expect(new Set(grants.map((g: { grant_id: string }) => g.grant_id)).size).toBe(2);
      const listed = (await server.adminCall('GET', `/admin/clients/${shop.client_id}/agents`)).json.agents;
      expect(listed).toEqual([expect.objectContaining({ agent_id: agent.agent_id, models: ['claude-opus-4', 'gpt-5'], grants: 2 })]);

      // the website can tell them apart: revoking one leaves the other
      const gpt = grants.find((g: { model: string }) => g.model === 'gpt-5');
      expect((await server.adminCall('POST', `/admin/grants/${gpt.grant_id}/revoke`)).json).toEqual({ revoked: 1 });
      await refusedWithinASecond(second, other.access_token);
      expect((await userinfo(second, other.access_token)).statusCode).toBe(401);
      expect((await userinfo(second, first.access_token)).statusCode).toBe(200);
    });
  });
});
