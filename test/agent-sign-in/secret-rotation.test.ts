import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchangeCode, introspect, issueTokens, refresh } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, authenticatedInFlight, completeInBrowser, signInToCode, startAuthorize } from '../helpers/flow.js';
import { ADMIN_TOKEN, closeAll, startTwoInstances, type TestServer } from '../helpers/server.js';

type Client = Awaited<ReturnType<TestServer['createClient']>>;
type Agent = Awaited<ReturnType<TestServer['createAgent']>>;

// What a thief who stole an agent's or a website's secret may hold: tokens, a code not yet
// redeemed, a sign-in the agent has authenticated and the browser has yet to complete. Rotating the
// secret (unless revoke_grants is false) and deactivating an agent end all of it, on every instance,
// and a reactivation brings none of it back (docs/security.md).
describe(`secret rotation and deactivation end what a thief holds (${storeName})`, () => {
  let server: TestServer;
  let second: TestServer;

  beforeAll(async () => ({ server, second } = await startTwoInstances()));
  afterAll(() => closeAll(second, server));

  async function held(client: Client, agent: Agent) {
    const tokens = await issueTokens(server, { client, agent });
    // Checked once on this instance, so that it sits in its cache when the change comes through the other.
    expect((await introspect(server, client, tokens.access_token)).json().active).toBe(true);
    const withCode = await signInToCode(server, { client, agent });
    return { tokens, withCode, started: await authenticatedInFlight(server, client, agent) };
  }
  type Held = Awaited<ReturnType<typeof held>>;

  /** What each held thing yields now; `client` with the secret the website uses now. */
  async function outcome(client: Client, { tokens, withCode, started }: Held) {
    const access = (await introspect(server, client, tokens.access_token)).json().active as boolean;
    const refreshed = await refresh(server, client, tokens.refresh_token);
    const exchanged = await exchangeCode(server, client, withCode.code, withCode.verifier);
    const completed = await completeInBrowser(server, started.requestId, started.cookie);
    return {
      access,
      refresh: refreshed.statusCode === 200 ? 'works' : refreshed.json().error,
      code: exchanged.statusCode === 200 ? 'works' : exchanged.json().error,
      request: completed.code ? 'works' : completed.res.statusCode,
    };
  }
  const ENDED = { access: false, refresh: 'invalid_grant', code: 'invalid_grant', request: 400 };
  const WORKING = { access: true, refresh: 'works', code: 'works', request: 'works' };

  const rotate = (path: string, body?: unknown) => second.adminCall('POST', `${path}/secret`, body);

  it("rotating an agent's secret ends its tokens, codes and sign-ins in flight; a bystander keeps its own", async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const bystander = await server.createAgent();
    const stolen = await held(client, agent);
    const spared = await held(client, bystander);

    const rotated = await rotate(`/admin/agents/${agent.agent_id}`);
    expect(rotated.statusCode).toBe(200);
    expect(rotated.json.agent_secret).not.toBe(agent.agent_secret);
    expect(await outcome(client, stolen)).toEqual(ENDED);
    expect(await outcome(client, spared)).toEqual(WORKING);

    // The old secret is refused, the new one signs in.
    const started = await startAuthorize(server, client);
    const old = await agentAuthenticate(server, { request_id: started.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    expect(old.statusCode).toBe(401);
    const fresh = { ...agent, agent_secret: rotated.json.agent_secret };
    expect((await exchangeCode(server, client, ...codeOf(await signInToCode(server, { client, agent: fresh })))).statusCode).toBe(200);
  });

  const codeOf = (signedIn: { code: string; verifier: string }) => [signedIn.code, signedIn.verifier] as const;

  it('an empty body, {} and an empty JSON body revoke as well; revoke_grants false rotates only the secret', async () => {
    const client = await server.createClient();
    for (const body of [undefined, {}, '']) {
      const agent = await server.createAgent();
      const stolen = await held(client, agent);
      const res =
        body === ''
          ? await second.admin.inject({
              method: 'POST',
              url: `/admin/agents/${agent.agent_id}/secret`,
              headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
              payload: '',
            })
          : await second.admin.inject({
              method: 'POST',
              url: `/admin/agents/${agent.agent_id}/secret`,
              headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
              ...(body === undefined ? {} : { payload: body }),
            });
      expect(res.statusCode, res.body).toBe(200);
      expect(await outcome(client, stolen)).toEqual(ENDED);
    }

    const agent = await server.createAgent();
    const kept = await held(client, agent);
    const rotated = await rotate(`/admin/agents/${agent.agent_id}`, { revoke_grants: false });
    expect(rotated.statusCode).toBe(200);
    expect(await outcome(client, kept)).toEqual(WORKING);
    const started = await startAuthorize(server, client);
    const old = await agentAuthenticate(server, { request_id: started.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    expect(old.statusCode).toBe(401);

    // The audit log says which it was.
    const audit = await server.adminCall('GET', `/admin/audit?agent_id=${agent.agent_id}&event=agent_secret_rotated`);
    expect(audit.json.events.map((e: { detail: unknown }) => e.detail)).toEqual([{ revoke_grants: false }]);
  });

  it("rotating a website's secret ends every token it holds and its sign-ins in flight, unless asked not to", async () => {
    const agent = await server.createAgent();
    const client = await server.createClient();
    const stolen = await held(client, agent);
    const rotated = await rotate(`/admin/clients/${client.client_id}`);
    expect(rotated.statusCode).toBe(200);
    const now = { ...client, client_secret: rotated.json.client_secret };
    expect(await outcome(now, stolen)).toEqual(ENDED);
    // The old secret is refused.
    expect((await introspect(server, client, stolen.tokens.access_token)).statusCode).toBe(401);

    const other = await server.createClient();
    const kept = await held(other, agent);
    const again = await rotate(`/admin/clients/${other.client_id}`, { revoke_grants: false });
    expect(again.statusCode).toBe(200);
    expect(await outcome({ ...other, client_secret: again.json.client_secret }, kept)).toEqual(WORKING);
    expect((await introspect(server, other, kept.tokens.access_token)).statusCode).toBe(401);
  });

  it('refuses a body that is not {revoke_grants: boolean}, rotating nothing', async () => {
    const agent = await server.createAgent();
    for (const body of [{ revoke_grants: 'yes' }, { revoke_grants: null }, { revoke: true }, [true]]) {
      const res = await server.adminCall('POST', `/admin/agents/${agent.agent_id}/secret`, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json.error).toBe('invalid_request');
    }
    expect((await server.adminCall('POST', '/admin/clients/client_nope/secret', { revoke_grants: true })).statusCode).toBe(404);
    const started = await startAuthorize(server, await server.createClient());
    expect(
      (await agentAuthenticate(server, { request_id: started.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret })).statusCode,
    ).toBe(200);
  });

  it('deactivate, rotate (keeping grants), reactivate: nothing held before works again', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const stolen = await held(client, agent);
    expect((await second.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { active: false })).statusCode).toBe(200);
    // revoke_grants false: what ends here, the deactivation ended.
    expect((await rotate(`/admin/agents/${agent.agent_id}`, { revoke_grants: false })).statusCode).toBe(200);
    expect((await second.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { active: true })).statusCode).toBe(200);
    expect(await outcome(client, stolen)).toEqual(ENDED);
  });
});
