import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentAuthClient, type PageLike, PossibleHijackError, WrongWebsiteError } from '../../src/agent/index.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, authenticatedAnswer, authorizeUrl, checkStatus, completeInBrowser, pkce, startAuthorize } from '../helpers/flow.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

// Whoever authenticates a request id decides who signs in: the request id is a bearer handle
// (docs/security.md). login_hint, the website in the authenticate answer, and the SDK's checks.
describe(`login_hint and the website in the authenticate answer (${storeName})`, () => {
  let server: TestServer;
  let client: Awaited<ReturnType<TestServer['createClient']>>;

  beforeAll(async () => {
    server = await startTestServer();
    client = await server.createClient(['http://localhost:8080/cb']);
  });
  afterAll(() => server.close());

  const authenticate = (requestId: string, agent: { agent_id: string; agent_secret: string }, extra: { expected_redirect_origin?: string } = {}) =>
    agentAuthenticate(server, { request_id: requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret, ...extra });

  it('with login_hint only that agent authenticates; another, with valid credentials, gets 403 and the request stays usable', async () => {
    const expected = await server.createAgent();
    const other = await server.createAgent();
    const started = await startAuthorize(server, client, { login_hint: expected.agent_id });
    expect(started.res.statusCode).toBe(200);

    const refused = await authenticate(started.requestId, other);
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual({ error: 'access_denied', error_description: expect.stringContaining('another agent') });
    expect((await checkStatus(server, started.requestId)).json()).toEqual({ status: 'pending' });

    const accepted = await authenticate(started.requestId, expected);
    expect(accepted.statusCode).toBe(200);
    expect(accepted.json()).toEqual(authenticatedAnswer(started.requestId, client));
    expect((await completeInBrowser(server, started.requestId, started.cookie)).code).toBeTruthy();
  });

  it('refuses a malformed login_hint with the invalid_request page', async () => {
    for (const hint of ['agent 1', 'agent_<x>', 'a'.repeat(201)]) {
      const { res } = await startAuthorize(server, client, { login_hint: hint });
      expect(res.statusCode).toBe(400);
      expect(res.body).toContain('<code id="error-code">invalid_request</code>');
    }
  });

  it('names the website (client, name, redirect origin with its port) in the answer, also on the repeat', async () => {
    const agent = await server.createAgent();
    const { requestId, res } = await startAuthorize(server, client);
    expect(res.body).toContain('<meta name="redirect-origin" content="http://localhost:8080">');
    const answer = { ...authenticatedAnswer(requestId, client), redirect_origin: 'http://localhost:8080' };
    expect((await authenticate(requestId, agent)).json()).toEqual(answer);
    expect((await authenticate(requestId, agent)).json()).toEqual(answer);
  });

  it('with expected_redirect_origin, refuses another website without authenticating', async () => {
    const agent = await server.createAgent();
    const { requestId } = await startAuthorize(server, client);
    const refused = await authenticate(requestId, agent, { expected_redirect_origin: 'https://shop.example' });
    expect(refused.statusCode).toBe(403);
    expect(refused.json()).toEqual({ error: 'redirect_origin_mismatch', error_description: expect.stringContaining('http://localhost:8080') });
    expect((await checkStatus(server, requestId)).json()).toEqual({ status: 'pending' });

    // The origin compares as an origin: case and a trailing slash do not matter.
    const accepted = await authenticate(requestId, agent, { expected_redirect_origin: 'HTTP://LOCALHOST:8080/' });
    expect(accepted.statusCode).toBe(200);
  });

  it('refuses an expected_redirect_origin that is not an origin', async () => {
    const agent = await server.createAgent();
    const { requestId } = await startAuthorize(server, client);
    for (const value of ['http://localhost:8080/cb', 'localhost:8080', 'http://localhost:8080?x=1', 'not a url']) {
      const res = await authenticate(requestId, agent, { expected_redirect_origin: value });
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toBe('invalid_request');
    }
    expect((await checkStatus(server, requestId)).json()).toEqual({ status: 'pending' });
  });
});

describe(`the agent SDK guards its sign-in (${storeName})`, () => {
  let server: TestServer;
  let baseUrl: string;

  beforeAll(async () => {
    server = await startTestServer();
    baseUrl = await server.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => server.close());

  /** The browser the agent drives, on the sign-in page of a website's request. */
  async function openPage() {
    const client = await server.createClient(['https://shop.example/cb']);
    const url = `${baseUrl}${authorizeUrl({
      client_id: client.client_id,
      redirect_uri: 'https://shop.example/cb',
      response_type: 'code',
      state: 'state-1',
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
    })}`;
    const res = await fetch(url);
    const html = await res.text();
    const page: PageLike = { url: () => url, content: async () => html };
    const requestId = /<meta name="request-id" content="([^"]+)">/.exec(html)![1];
    return { page, requestId };
  }

  async function sdk() {
    const agent = await server.createAgent();
    return { agent, client: new AgentAuthClient({ baseUrl, agentId: agent.agent_id, agentSecret: agent.agent_secret, model: 'gpt-test' }) };
  }

  it('signIn with expectedWebsite refuses a sign-in for another website, and the request stays pending', async () => {
    const { page, requestId } = await openPage();
    const err = await (await sdk()).client.signIn(page, { expectedWebsite: 'https://bank.example', timeoutMs: 5000 }).catch((e) => e);
    expect(err).toBeInstanceOf(WrongWebsiteError);
    expect(err).toMatchObject({ code: 'redirect_origin_mismatch', status: 403 });
    expect((await checkStatus(server, requestId)).json()).toEqual({ status: 'pending' });
  });

  it('signIn with expectedWebsite goes ahead for that website (a URL counts as its origin)', async () => {
    const { page } = await openPage();
    const { client } = await sdk();
    const result = await client.signIn(page, { expectedWebsite: 'https://shop.example/account', until: 'authenticated', timeoutMs: 5000 });
    expect(result.status).toBe('authenticated');
  });

  it('reports another agent authenticating its own page first as a possible hijack', async () => {
    const { page, requestId } = await openPage();
    const thief = await server.createAgent();
    const taken = await agentAuthenticate(server, { request_id: requestId, agent_id: thief.agent_id, agent_secret: thief.agent_secret });
    expect(taken.statusCode).toBe(200);
    const err = await (await sdk()).client.signIn(page, { timeoutMs: 5000 }).catch((e) => e);
    expect(err).toBeInstanceOf(PossibleHijackError);
    expect(err).toMatchObject({ code: 'request_already_authenticated', status: 409, requestId });
  });
});
