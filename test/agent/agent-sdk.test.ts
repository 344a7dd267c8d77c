import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AccessDeniedError,
  AgentAuthClient,
  findRequestId,
  InvalidCredentialsError,
  InvalidRequestError,
  RequestAlreadyAuthenticatedError,
  RequestExpiredError,
  RequestNotFoundError,
} from '../../src/agent/index.js';
import { storeName } from '../helpers/database.js';
import { authenticatedAnswer, authorizeUrl, pkce } from '../helpers/flow.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describe('the package export agent-auth/agent', () => {
  it('resolves through package.json exports to the SDK package (sdk/typescript), with everything it exports', async () => {
    const sdk = await import('../../sdk/typescript/src/index.js');
    const published = await import('agent-auth/agent');
    expect(Object.keys(published).sort()).toEqual(Object.keys(sdk).sort());
    expect(typeof published.AgentAuthClient).toBe('function');
  });
});

describe(`AgentAuthClient against the real server (${storeName})`, () => {
  let server: TestServer;
  let baseUrl: string;

  async function listen(env: Parameters<typeof startTestServer>[0] = {}) {
    const s = await startTestServer(env);
    return { server: s, baseUrl: await s.app.listen({ port: 0, host: '127.0.0.1' }) };
  }

  beforeAll(async () => ({ server, baseUrl } = await listen()));
  afterAll(() => server?.close());

  /** What the user's browser does: open /authorize, keeping the binding cookie. */
  async function openAuthorizePage(url: string, client: { client_id: string; redirect_uris: string[] }) {
    const res = await fetch(
      `${url}${authorizeUrl({
        client_id: client.client_id,
        redirect_uri: client.redirect_uris[0],
        response_type: 'code',
        state: 'state-1',
        code_challenge: pkce().challenge,
        code_challenge_method: 'S256',
      })}`,
      { redirect: 'manual' },
    );
    expect(res.status).toBe(200);
    const cookie = res.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    return { html: await res.text(), cookie };
  }

  function agentClient(url: string, agent: { agent_id: string; agent_secret: string }, model = 'gpt-test') {
    return new AgentAuthClient({ baseUrl: url, agentId: agent.agent_id, agentSecret: agent.agent_secret, model });
  }

  it('signs in: page -> authenticate -> browser completes -> completed', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const page = await openAuthorizePage(baseUrl, client);
    const requestId = findRequestId(page.html);
    expect(requestId).toMatch(/\S{16,}/);

    const sdk = agentClient(baseUrl, agent);
    expect(await sdk.checkStatus(requestId!)).toMatchObject({ status: 'pending' });
    expect(await sdk.authenticate(requestId!)).toEqual(authenticatedAnswer(requestId!, client));
    expect(await sdk.waitForCompletion(requestId!, { until: 'authenticated', intervalMs: 50 })).toMatchObject({ status: 'authenticated' });

    const waiting = sdk.waitForCompletion(requestId!, { intervalMs: 50, timeoutMs: 10_000 });
    const done = await fetch(`${baseUrl}/authorize/complete?request_id=${encodeURIComponent(requestId!)}`, {
      headers: { cookie: page.cookie },
      redirect: 'manual',
    });
    expect(done.status).toBe(302);
    expect(new URL(done.headers.get('location')!).searchParams.get('code')).toBeTruthy();
    expect(await waiting).toMatchObject({ status: 'completed' });
  });

  it('reports a wrong secret as InvalidCredentialsError', async () => {
    const client = await server.createClient();
    const agent = await server.createAgent();
    const requestId = findRequestId((await openAuthorizePage(baseUrl, client)).html)!;
    const err = await agentClient(baseUrl, { ...agent, agent_secret: 'wrong' })
      .authenticate(requestId)
      .catch((e) => e);
    expect(err).toBeInstanceOf(InvalidCredentialsError);
    expect(err).toMatchObject({ code: 'invalid_credentials', status: 401 });
  });

  it('reports an unknown request as RequestNotFoundError, from both endpoints', async () => {
    const sdk = agentClient(baseUrl, await server.createAgent());
    const fromAuth = await sdk.authenticate('req_does_not_exist').catch((e) => e);
    expect(fromAuth).toBeInstanceOf(RequestNotFoundError);
    expect(fromAuth.status).toBe(404);
    await expect(sdk.waitForCompletion('req_does_not_exist')).rejects.toBeInstanceOf(RequestNotFoundError);
  });

  it('reports a request another agent took as RequestAlreadyAuthenticatedError', async () => {
    const client = await server.createClient();
    const requestId = findRequestId((await openAuthorizePage(baseUrl, client)).html)!;
    await agentClient(baseUrl, await server.createAgent()).authenticate(requestId);
    const err = await agentClient(baseUrl, await server.createAgent())
      .authenticate(requestId)
      .catch((e) => e);
    expect(err).toBeInstanceOf(RequestAlreadyAuthenticatedError);
    expect(err.status).toBe(409);
  });

  it('reports a malformed call as InvalidRequestError', async () => {
    const client = await server.createClient();
    const requestId = findRequestId((await openAuthorizePage(baseUrl, client)).html)!;
    const err = await agentClient(baseUrl, await server.createAgent(), '   ')
      .authenticate(requestId)
      .catch((e) => e);
    expect(err).toBeInstanceOf(InvalidRequestError);
    expect(err.status).toBe(400);
  });

  it('reports an expired request as RequestExpiredError', async () => {
    const short = await listen({ AUTH_REQUEST_TTL_SECONDS: '1' } as never);
    try {
      const client = await short.server.createClient();
      const sdk = agentClient(short.baseUrl, await short.server.createAgent());
      const requestId = findRequestId((await openAuthorizePage(short.baseUrl, client)).html)!;
      await new Promise((r) => setTimeout(r, 1200));
      const fromAuth = await sdk.authenticate(requestId).catch((e) => e);
      expect(fromAuth).toBeInstanceOf(RequestExpiredError);
      expect(fromAuth.status).toBe(400);
      const fromWait = await sdk.waitForCompletion(requestId).catch((e) => e);
      expect(fromWait).toBeInstanceOf(RequestExpiredError);
      expect(fromWait.description).toBe('the authorization request has expired');
    } finally {
      await short.server.close();
    }
  });

  it('reports a sign-in the user denied as AccessDeniedError', async () => {
    const approving = await listen({ REQUIRE_APPROVAL: 'true' } as never);
    try {
      const client = await approving.server.createClient();
      const sdk = agentClient(approving.baseUrl, await approving.server.createAgent());
      const page = await openAuthorizePage(approving.baseUrl, client);
      const requestId = findRequestId(page.html)!;
      await sdk.authenticate(requestId);

      const approval = await fetch(`${approving.baseUrl}/authorize/complete?request_id=${encodeURIComponent(requestId)}`, {
        headers: { cookie: page.cookie },
      });
      const csrf = /name="csrf_token" value="([^"]+)"/.exec(await approval.text())![1];
      const denied = await fetch(`${approving.baseUrl}/authorize/decision`, {
        method: 'POST',
        headers: { cookie: page.cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ request_id: requestId, csrf_token: csrf, decision: 'deny' }),
        redirect: 'manual',
      });
      expect(denied.status).toBe(303);

      const err = await sdk.waitForCompletion(requestId).catch((e) => e);
      expect(err).toBeInstanceOf(AccessDeniedError);
      expect(err.code).toBe('access_denied');
    } finally {
      await approving.server.close();
    }
  });
});
