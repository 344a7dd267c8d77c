import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchangeCode } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, authenticatedInFlight, completeInBrowser, startAuthorize } from '../helpers/flow.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// A completion whose answer was lost (the server said 503 but the write committed later, or the
// connection dropped) must not lose the sign-in: the same browser coming back gets a fresh code that
// spends the one it never delivered (docs/security.md).
describe(`/authorize/complete is retry-safe for the browser that started the sign-in (${storeName})`, () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  /** A sign-in completed once, its code taken from the redirect but never redeemed. */
  async function completedOnce() {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const started = await authenticatedInFlight(server, client, agent);
    const first = await completeInBrowser(server, started.requestId, started.cookie);
    expect(first.res.statusCode).toBe(302);
    return { client, agent, started, first: first.code! };
  }

  it('gives the same browser a fresh code that replaces the undelivered one; once redeemed, a further visit is refused', async () => {
    const { client, started, first } = await completedOnce();
    const again = await completeInBrowser(server, started.requestId, started.cookie);
    expect(again.res.statusCode).toBe(302);
    expect(again.params.get('state')).toBe(started.state);
    expect(again.params.get('iss')).toBe('http://localhost:3000');
    expect(again.code).toBeTruthy();
    expect(again.code).not.toBe(first);

    // The replaced code is spent; presenting it costs the fresh one nothing.
    const old = await exchangeCode(server, client, first, started.verifier);
    expect(old.statusCode).toBe(400);
    expect(old.json().error).toBe('invalid_grant');
    const fresh = await exchangeCode(server, client, again.code!, started.verifier);
    expect(fresh.statusCode).toBe(200);

    const after = await completeInBrowser(server, started.requestId, started.cookie);
    expect(after.res.statusCode).toBe(400);
    expect(after.code).toBeUndefined();
    expect(after.res.body).toContain('<code id="error-code">invalid_request</code>');

    // One sign-in, completed once, as the audit log tells it.
    const events = (await server.adminCall('GET', `/admin/audit?request_id=${started.requestId}&event=completed`)).json.events;
    expect(events).toHaveLength(1);
  });

  it('refuses another browser, and leaves the undelivered code working', async () => {
    const { client, started, first } = await completedOnce();
    const other = await startAuthorize(server, client);
    const otherCookie = other.cookie!.replace(other.requestId, started.requestId);
    for (const cookie of [undefined, otherCookie]) {
      const res = await completeInBrowser(server, started.requestId, cookie);
      expect(res.res.statusCode).toBe(400);
      expect(res.code).toBeUndefined();
    }
    expect((await exchangeCode(server, client, first, started.verifier)).statusCode).toBe(200);
  });

  it('gives nothing back once the kill switch has spent the code', async () => {
    const { agent, started } = await completedOnce();
    expect((await server.adminCall('POST', `/admin/agents/${agent.agent_id}/revoke-grants`)).statusCode).toBe(200);
    const res = await completeInBrowser(server, started.requestId, started.cookie);
    expect(res.res.statusCode).toBe(400);
    expect(res.code).toBeUndefined();
  });

  it('never leaves two working codes: a retry racing the redemption of the undelivered code', async () => {
    for (let i = 0; i < 5; i++) {
      const { client, started, first } = await completedOnce();
      const [redeemed, again] = await Promise.all([
        exchangeCode(server, client, first, started.verifier),
        completeInBrowser(server, started.requestId, started.cookie),
      ]);
      const fresh = again.code ? await exchangeCode(server, client, again.code, started.verifier) : undefined;
      // Exactly one of the two codes yields tokens.
      expect([redeemed.statusCode, fresh?.statusCode ?? 400].sort()).toEqual([200, 400]);
    }
  });

  it('with REQUIRE_APPROVAL, an approval posted again gets a fresh code; a deny or a redeemed code does not', async () => {
    const approving = await startTestServer({ REQUIRE_APPROVAL: 'true' });
    try {
      const client = await approving.createClient();
      const agent = await approving.createAgent();
      const started = await startAuthorize(approving, client);
      await agentAuthenticate(approving, { request_id: started.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
      const page = await completeInBrowser(approving, started.requestId, started.cookie);
      const csrf = /name="csrf_token" value="([^"]+)"/.exec(page.res.body)![1];
      const decide = (decision: string) =>
        approving.app.inject({
          method: 'POST',
          url: '/authorize/decision',
          headers: { cookie: started.cookie! },
          payload: { request_id: started.requestId, csrf_token: csrf, decision },
        });
      const codeOf = (res: Awaited<ReturnType<typeof decide>>) => new URL(res.headers.location as string).searchParams.get('code')!;
      const first = await decide('approve');
      expect(first.statusCode).toBe(303);
      const again = await decide('approve');
      expect(again.statusCode).toBe(303);
      expect(codeOf(again)).not.toBe(codeOf(first));
      expect((await decide('deny')).statusCode).toBe(400);
      expect((await exchangeCode(approving, client, codeOf(first), started.verifier)).statusCode).toBe(400);
      expect((await exchangeCode(approving, client, codeOf(again), started.verifier)).statusCode).toBe(200);
      expect((await decide('approve')).statusCode).toBe(400);
    } finally {
      await approving.close();
    }
  });
});
