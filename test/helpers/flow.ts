import { createHash, randomBytes } from 'node:crypto';
import type { TestServer } from './server.js';

export function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  return { verifier, challenge };
}

export function authorizeUrl(params: Record<string, string | undefined>) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined) as [string, string][]);
  return `/authorize?${query}`;
}

/** GET /authorize as a browser would; returns the request id from the page and the binding cookie. */
export async function startAuthorize(
  server: TestServer,
  client: { client_id: string; redirect_uris: string[] },
  overrides: Record<string, string | undefined> = {},
  cookie?: string,
) {
  const { verifier, challenge } = pkce();
  const state = randomBytes(16).toString('base64url');
  const res = await server.app.inject({
    url: authorizeUrl({
      client_id: client.client_id,
      redirect_uri: client.redirect_uris[0],
      response_type: 'code',
      state,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...overrides,
    }),
    headers: cookie ? { cookie } : {},
  });
  const requestId = /<meta name="request-id" content="([^"]+)">/.exec(res.body)?.[1];
  const setCookie = requestId ? bindingCookie(res, requestId) : undefined;
  return { res, requestId: requestId!, cookie: setCookie ? `${setCookie.name}=${setCookie.value}` : cookie, state, verifier };
}

/** The cookie that binds sign-in `requestId` to the browser (`__Host-` prefixed with an https issuer). */
export function bindingCookie<C extends { name: string; value: string }>(res: { cookies: C[] }, requestId: string) {
  return res.cookies.find((c) => c.name === `agent_auth_${requestId}` || c.name === `__Host-agent_auth_${requestId}`);
}

export function agentAuthenticate(
  server: TestServer,
  body: { request_id: string; agent_id: string; agent_secret: string; model?: string; expected_redirect_origin?: string },
) {
  return server.app.inject({
    method: 'POST',
    url: '/api/agent/authenticate',
    payload: { model: 'test-model-1', ...body },
  });
}

export async function checkStatus(server: TestServer, requestId: string) {
  return server.app.inject({ url: `/api/check-status?request_id=${encodeURIComponent(requestId)}` });
}

/** A sign-in the agent has authenticated and the browser has yet to complete. */
export async function authenticatedInFlight(
  server: TestServer,
  client: { client_id: string; redirect_uris: string[] },
  agent: { agent_id: string; agent_secret: string },
) {
  const started = await startAuthorize(server, client);
  const auth = await agentAuthenticate(server, { request_id: started.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
  if (auth.statusCode !== 200) throw new Error(`authenticate failed: ${auth.body}`);
  return started;
}

/** The browser's last step: returns the redirect and the parameters it carries. */
export async function completeInBrowser(server: TestServer, requestId: string, cookie: string | undefined) {
  const res = await server.app.inject({
    url: `/authorize/complete?request_id=${encodeURIComponent(requestId)}`,
    headers: cookie ? { cookie } : {},
  });
  const location = res.headers.location as string | undefined;
  const params = location ? new URL(location).searchParams : new URLSearchParams();
  return { res, location, code: params.get('code') ?? undefined, params };
}

/** A whole sign-in up to the code: new client and agent unless given. */
export async function signInToCode(
  server: TestServer,
  options: {
    client?: { client_id: string; client_secret: string; redirect_uris: string[] };
    agent?: { agent_id: string; agent_secret: string; email: string };
    scope?: string;
    model?: string;
    /** More parameters of the authorization request. */
    authorize?: Record<string, string>;
  } = {},
) {
  const client = options.client ?? (await server.createClient());
  const agent = options.agent ?? (await server.createAgent());
  const started = await startAuthorize(server, client, { ...(options.scope === undefined ? {} : { scope: options.scope }), ...options.authorize });
  const auth = await agentAuthenticate(server, {
    request_id: started.requestId,
    agent_id: agent.agent_id,
    agent_secret: agent.agent_secret,
    model: options.model ?? 'test-model-1',
  });
  if (auth.statusCode !== 200) throw new Error(`authenticate failed: ${auth.body}`);
  const done = await completeInBrowser(server, started.requestId, started.cookie);
  if (!done.code) throw new Error(`no code: ${done.res.statusCode} ${done.res.body.slice(0, 300)}`);
  return { client, agent, code: done.code, verifier: started.verifier, state: started.state, requestId: started.requestId };
}

/**
 * Moves a request's expiry to `seconds` from now (negative: already past). Tests that need a step
 * to happen before the expiry use this rather than a short TTL, which a busy machine can outrun.
 */
export async function setRequestExpiry(server: TestServer, requestId: string, seconds: number) {
  await server.services.db.query(`UPDATE auth_requests SET expires_at = now() + make_interval(secs => $2) WHERE id = $1`, [requestId, seconds]);
}

/** The 200 answer of POST /api/agent/authenticate for a sign-in at `client` (created by the test server: "Shop"). */
export function authenticatedAnswer(requestId: string, client: { client_id: string; redirect_uris: string[] }) {
  return {
    status: 'authenticated',
    request_id: requestId,
    client_id: client.client_id,
    client_name: 'Shop',
    redirect_origin: new URL(client.redirect_uris[0]).origin,
  };
}
