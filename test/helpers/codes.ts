import { randomToken, sha256 } from '../../src/crypto/secrets.js';
import type { Services } from '../../src/services.js';
import { pkce } from './flow.js';
import type { TestServer } from './server.js';

/**
 * An authorization code as the sign-in flow leaves it, made through the store's own steps (a request
 * started, authenticated and completed), for cases the browser flow cannot produce on demand: any
 * scope or model, or a code that has already expired (its expiry then moved back in SQL).
 */
export async function insertCode(
  services: Services,
  input: {
    clientId: string;
    agentId: string;
    redirectUri: string;
    scope?: string;
    model?: string;
    /** Negative for a code that has already expired. */
    expiresInSeconds?: number;
  },
) {
  const { signIns } = services.store;
  const { verifier, challenge } = pkce();
  const browserHash = sha256(randomToken(32));
  const started = await signIns.create(
    {
      client_id: input.clientId,
      redirect_uri: input.redirectUri,
      state: 'fixture-state',
      code_challenge: challenge,
      scope: input.scope ?? 'openid email profile',
      browser_hash: browserHash,
      login_hint: null,
      nonce: null,
    },
    600,
  );
  if (!(await signIns.authenticate(started.id, input.agentId, input.model ?? 'test-model-1', 'TST-000')))
    throw new Error('fixture request not authenticated');
  const completed = await signIns.complete(started.id, browserHash, Math.max(1, input.expiresInSeconds ?? 600));
  if (!completed) throw new Error('fixture request not completed');
  const { expiresInSeconds } = input;
  if (expiresInSeconds !== undefined && expiresInSeconds <= 0) {
    await services.db.query(`UPDATE auth_codes SET expires_at = now() + make_interval(secs => $2::int) WHERE request_id = $1`, [
      started.id,
      expiresInSeconds,
    ]);
  }
  return { code: completed.code, verifier };
}

/** A code for `client` at its first redirect URI, as a sign-in leaves it: for `agent`, or a new agent. */
export async function codeForClient(
  server: TestServer,
  client: { client_id: string; redirect_uris: string[] },
  options: { agent?: Awaited<ReturnType<TestServer['createAgent']>>; scope?: string; model?: string; expiresInSeconds?: number } = {},
) {
  const { agent = await server.createAgent(), ...rest } = options;
  const inserted = await insertCode(server.services, {
    clientId: client.client_id,
    agentId: agent.agent_id,
    redirectUri: client.redirect_uris[0],
    ...rest,
  });
  return { agent, ...inserted };
}

export interface Credentials {
  client_id: string;
  client_secret: string;
}

/** A form-urlencoded POST, the way RFC 6749 clients send it; `basic` moves the credentials to the header. */
export function postForm(server: TestServer, url: string, form: Record<string, string | string[] | undefined>, headers: Record<string, string> = {}) {
  const body = new URLSearchParams();
  for (const [key, value] of Object.entries(form)) {
    for (const v of value === undefined ? [] : Array.isArray(value) ? value : [value]) body.append(key, v);
  }
  return server.app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    payload: body.toString(),
  });
}

/** RFC 6749 §2.3.1: form-urlencode id and secret, then Basic. */
export function basicAuth(client: Credentials): string {
  const encode = (s: string) => encodeURIComponent(s).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(client.client_id)}:${encode(client.client_secret)}`).toString('base64')}`;
}

const credentials = (client: Credentials) => ({ client_id: client.client_id, client_secret: client.client_secret });

export function exchangeCode(
  server: TestServer,
  client: Credentials & { redirect_uris: string[] },
  code: string,
  verifier: string,
  extra: Record<string, string | undefined> = {},
) {
  return postForm(server, '/token', {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    redirect_uri: client.redirect_uris[0],
    ...credentials(client),
    ...extra,
  });
}

export function refresh(server: TestServer, client: Credentials, refreshToken: string, extra: Record<string, string> = {}) {
  return postForm(server, '/token', { grant_type: 'refresh_token', refresh_token: refreshToken, ...credentials(client), ...extra });
}

export function introspect(server: TestServer, client: Credentials, token: string) {
  return postForm(server, '/introspect', { token, ...credentials(client) });
}

export function revoke(server: TestServer, client: Credentials, token: string, extra: Record<string, string> = {}) {
  return postForm(server, '/revoke', { token, ...credentials(client), ...extra });
}

export function userinfo(server: TestServer, accessToken: string) {
  return server.app.inject({ url: '/userinfo', headers: { authorization: `Bearer ${accessToken}` } });
}

/** A new client and agent, a code inserted for them, and the tokens it was exchanged for. */
export async function issueTokens(
  server: TestServer,
  options: { client?: Credentials & { redirect_uris: string[] }; agent?: { agent_id: string; email: string }; scope?: string } = {},
) {
  const client = options.client ?? (await server.createClient());
  const agent = options.agent ?? (await server.createAgent());
  const { code, verifier } = await insertCode(server.services, {
    clientId: client.client_id,
    agentId: agent.agent_id,
    redirectUri: client.redirect_uris[0],
    scope: options.scope,
  });
  const res = await exchangeCode(server, client, code, verifier);
  if (res.statusCode !== 200) throw new Error(`code exchange failed: ${res.body}`);
  const tokens = res.json() as { access_token: string; refresh_token: string; scope: string; expires_in: number };
  return { client, agent, code, verifier, ...tokens };
}
