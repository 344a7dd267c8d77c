import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchangeCode } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, authenticatedInFlight, checkStatus, completeInBrowser, signInToCode, startAuthorize } from '../helpers/flow.js';
import { closeAll, startTwoInstances, type TestServer } from '../helpers/server.js';

type Client = Awaited<ReturnType<TestServer['createClient']>>;
type Agent = Awaited<ReturnType<TestServer['createAgent']>>;

// The admin call that pulls each switch, and the sign-in it must leave alone: another agent of
// another user at the same website, or the same agent at another website.
const SWITCHES = {
  agent: { pull: (agent: Agent) => [`/admin/agents/${agent.agent_id}/revoke-grants`, undefined] as const, bystander: 'agent' },
  user: { pull: (agent: Agent) => ['/admin/users/revoke-grants', { email: agent.email }] as const, bystander: 'agent' },
  client: { pull: (_: Agent, client: Client) => [`/admin/clients/${client.client_id}/revoke-grants`, undefined] as const, bystander: 'client' },
} as const;

// Revoking grants also ends the sign-ins in flight, so nothing begun before the switch yields a
// token after it (docs/security.md). Pulled through one instance, obeyed by the other.
describe(`the kill switch ends sign-ins in flight (${storeName})`, () => {
  let server: TestServer;
  let second: TestServer;

  beforeAll(async () => ({ server, second } = await startTwoInstances()));
  afterAll(() => closeAll(second, server));

  for (const [level, { pull, bystander }] of Object.entries(SWITCHES)) {
    it(`revoking a${level === 'agent' ? 'n' : ''} ${level}'s grants spends its unspent codes and denies its authenticated requests`, async () => {
      const client = await server.createClient();
      const agent = await server.createAgent();
      const spared = bystander === 'agent' ? { client, agent: await server.createAgent() } : { client: await server.createClient(), agent };

      const withCode = await signInToCode(server, { client, agent });
      const authenticated = await authenticatedInFlight(server, client, agent);
      const sparedCode = await signInToCode(server, spared);
      const sparedRequest = await authenticatedInFlight(server, spared.client, spared.agent);

      const [url, body] = pull(agent, client);
      const switched = await second.adminCall('POST', url, body);
      expect(switched.statusCode).toBe(200);

      const token = await exchangeCode(server, client, withCode.code, withCode.verifier);
      expect(token.statusCode).toBe(400);
      expect(token.json().error).toBe('invalid_grant');

      const done = await completeInBrowser(server, authenticated.requestId, authenticated.cookie);
      expect(done.code).toBeUndefined();
      expect(done.res.statusCode).toBe(400);
      expect(done.res.body).toContain('<code id="error-code">access_denied</code>');
      // Ended by an operator, not by the person: every answer says "denied", none blames the user.
      expect(done.res.body).toContain('<dd>This sign-in was denied.</dd>');
      expect((await checkStatus(server, authenticated.requestId)).json()).toEqual({
        status: 'error',
        error: 'access_denied',
        error_description: 'this sign-in was denied',
      });

      // Everyone else's sign-ins carry on.
      expect((await exchangeCode(server, spared.client, sparedCode.code, sparedCode.verifier)).statusCode).toBe(200);
      expect((await completeInBrowser(server, sparedRequest.requestId, sparedRequest.cookie)).code).toBeTruthy();
    });
  }

  it('sign-ins completing and codes redeemed while the switch is pulled yield no live grant after it', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const codes = await Promise.all(Array.from({ length: 4 }, () => signInToCode(server, { client, agent })));
    const requests = await Promise.all(Array.from({ length: 4 }, () => authenticatedInFlight(server, client, agent)));
    // Everything at once, on both instances: redemptions, completions and the switch.
    const exchanges = codes.map((c) => exchangeCode(server, client, c.code, c.verifier));
    const completions = requests.map((r) => completeInBrowser(second, r.requestId, r.cookie));
    expect((await second.adminCall('POST', `/admin/agents/${agent.agent_id}/revoke-grants`)).statusCode).toBe(200);
    await Promise.all(exchanges);
    // A code that made it out of a completion is spent by the switch.
    for (const [i, done] of (await Promise.all(completions)).entries()) {
      if (done.code) expect((await exchangeCode(server, client, done.code, requests[i].verifier)).statusCode).toBe(400);
    }
    // Whatever the order, no grant of the agent is live once the switch has been pulled.
    const { json } = await server.adminCall('GET', `/admin/agents/${agent.agent_id}/grants`);
    expect(json.grants.filter((g: { active: boolean }) => g.active)).toEqual([]);
  });

  it("revoking a website's grants also ends its sign-ins still waiting for an agent", async () => {
    const client = await server.createClient();
    const pending = await startAuthorize(server, client);
    expect((await second.adminCall('POST', `/admin/clients/${client.client_id}/revoke-grants`)).statusCode).toBe(200);
    const agent = await server.createAgent();
    const auth = await agentAuthenticate(server, { request_id: pending.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    expect(auth.statusCode).toBe(403);
    expect(auth.json()).toEqual({ error: 'access_denied', error_description: 'this sign-in was denied' });
    expect((await checkStatus(server, pending.requestId)).json()).toEqual({
      status: 'error',
      error: 'access_denied',
      error_description: 'this sign-in was denied',
    });
  });

  it('revoking one grant leaves the sign-ins in flight alone', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const first = await signInToCode(server, { client, agent });
    const tokens = (await exchangeCode(server, client, first.code, first.verifier)).json();
    const grantId = (await server.adminCall('GET', `/admin/agents/${agent.agent_id}/grants`)).json.grants[0].grant_id;
    const inFlight = await signInToCode(server, { client, agent });
    expect(tokens.access_token).toBeTruthy();
    expect((await second.adminCall('POST', `/admin/grants/${grantId}/revoke`)).json).toEqual({ revoked: 1 });
    expect((await exchangeCode(server, client, inFlight.code, inFlight.verifier)).statusCode).toBe(200);
  });
});
