import { AgentAuthClient, AgentAuthError, authorizationResponse, OwnerDeniedError, type WaitStatus } from '@agent-auth/agent';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { authorizeUrl, pkce } from '../helpers/flow.js';
import { closeServerWithMail, signInOwner, startServerWithMail } from '../helpers/owner.js';
import { ISSUER, type TestServer } from '../helpers/server.js';
import type { TestSmtp } from '../helpers/smtp.js';

/**
 * The agent SDK's headless sign-in (`signInHeadless`): the agent is its own browser, from an
 * authorization URL an OAuth client library built to the redirect that carries the code.
 */
describe(`an agent signs in with no browser (${storeName})`, () => {
  let smtp: TestSmtp;
  let server: TestServer;
  // The owner helpers speak to the default issuer; the agent reaches the same server on a real socket.
  let baseUrl: string;
  const redirectUri = 'http://127.0.0.1:8123/callback';

  beforeAll(async () => {
    ({ smtp, server } = await startServerWithMail({ RATE_LIMIT_EMAIL_LINK_PER_IP: '1000', RATE_LIMIT_EMAIL_LINK_PER_EMAIL: '1000' }));
    baseUrl = await server.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => closeServerWithMail({ smtp, server }));

  /** A website, an agent and the authorization URL its OAuth library would send a browser to. */
  async function setUp(email = `owner-${crypto.randomUUID()}@example.com`) {
    const website = await server.createClient([redirectUri]);
    const agent = await server.createAgent(email);
    const sdk = new AgentAuthClient({ baseUrl, agentId: agent.agent_id, agentSecret: agent.agent_secret, model: 'headless-1' });
    const { verifier, challenge } = pkce();
    const state = crypto.randomUUID();
    const params = {
      client_id: website.client_id,
      redirect_uri: redirectUri,
      response_type: 'code',
      state,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    };
    const url = `${baseUrl}${authorizeUrl({ ...params, scope: 'email' })}`;
    return { website, agent, sdk, verifier, state, url, params };
  }

  it('follows the sign-in to the redirect with the code, which the website redeems for a token of this agent', async () => {
    const { website, agent, sdk, verifier, state, url } = await setUp();
    const redirect = await sdk.signInHeadless(url);
    expect(`${redirect.origin}${redirect.pathname}`).toBe(redirectUri);
    const { code } = authorizationResponse(redirect, { state, issuer: ISSUER });
    const token = await fetch(`${baseUrl}/token`, {
      method: 'POST',
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: redirectUri,
        code_verifier: verifier,
        client_id: website.client_id,
        client_secret: website.client_secret,
      }),
    });
    expect(token.status).toBe(200);
    const userinfo = await fetch(`${baseUrl}/userinfo`, { headers: { authorization: `Bearer ${(await token.json()).access_token}` } });
    expect(await userinfo.json()).toEqual({ sub: agent.agent_id, email: agent.email });
  });

  it("waits through the owner's approval, and reports the owner's denial as OwnerDeniedError", async () => {
    const email = `owner-${crypto.randomUUID()}@example.com`;
    const owner = await signInOwner(server.app, smtp, email);
    expect((await owner.call('PATCH', '/account/api/me', { approval_policy: 'always' })).statusCode).toBe(200);
    for (const decision of ['approve', 'deny'] as const) {
      const { sdk, state, url } = await setUp(email);
      const seen: WaitStatus[] = [];
      const signingIn = sdk.signInHeadless(url, { approvalTimeoutMs: 20_000, onStatus: (s) => seen.push(s) });
      signingIn.catch(() => undefined);
      await expect.poll(() => seen, { timeout: 10_000 }).toContain('waiting_for_owner_approval');
      const approvals = (await owner.call('GET', '/account/api/approvals')).json().approvals;
      expect((await owner.call('POST', `/account/api/approvals/${approvals[0].request_id}`, { decision })).statusCode).toBe(200);
      if (decision === 'approve') expect(authorizationResponse(await signingIn, { state, issuer: ISSUER }).code).toBeTruthy();
      else await expect(signingIn).rejects.toBeInstanceOf(OwnerDeniedError);
    }
  });

  it("refuses an authorization URL of another server, and reports the authorization page's refusal by its code", async () => {
    const { sdk, params } = await setUp();
    await expect(sdk.signInHeadless(`http://localhost:1${authorizeUrl(params)}`)).rejects.toThrow(/not on/);
    const refused = await sdk.signInHeadless(`${baseUrl}${authorizeUrl({ ...params, client_id: 'client_unknown' })}`).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(AgentAuthError);
    expect(refused).toMatchObject({ code: 'invalid_client', status: 400 });
  });

  it('takes a code only with the state it sent and from the issuer it expects (RFC 9207)', () => {
    const issuer = ISSUER;
    const redirect = (query: string) => new URL(`${redirectUri}?${query}`);
    expect(authorizationResponse(redirect(`code=c&state=s&iss=${encodeURIComponent(issuer)}`), { state: 's', issuer })).toEqual({
      code: 'c',
      state: 's',
    });
    expect(() => authorizationResponse(redirect(`code=c&state=other&iss=${encodeURIComponent(issuer)}`), { state: 's', issuer })).toThrow(/state/);
    expect(() => authorizationResponse(redirect('code=c&state=s&iss=https%3A%2F%2Fevil.example'), { state: 's', issuer })).toThrow(/evil/);
    expect(() => authorizationResponse(redirect(`error=access_denied&state=s&iss=${encodeURIComponent(issuer)}`), { state: 's', issuer })).toThrow(
      /access_denied/,
    );
  });
});
