import { generateKeyPairSync } from 'node:crypto';
import { type AssertionKey, createAssertion, keyFromPrivateKey } from '@agent-auth/agent';
import { CookieJar, expectStatus, FORM, form, pkce, send } from './http.js';
import type { Target } from './load.js';

export interface OurClient {
  client_id: string;
  client_secret: string;
  redirect_uris: string[];
}
/** What a website authenticates with. */
export type ClientCredentials = Pick<OurClient, 'client_id' | 'client_secret'>;
export interface OurAgent {
  agent_id: string;
  agent_secret: string;
  /** With a key, the agent authenticates with an assertion (signed by the bench, not the server) instead of its secret. */
  key?: AssertionKey;
}
export interface TokenSet {
  access_token: string;
  refresh_token: string;
}

export const ADMIN_TOKEN = 'bench-admin-token-0123456789abcdef';
export const REDIRECT_URI = 'http://localhost:9/callback';
/** The resource (an MCP server) the resource sign-ins are for; nothing listens there, its tokens are checked in the bench. */
export const RESOURCE = 'https://mcp.bench.example/mcp';

/**
 * Our server's environment for a run: quiet logs, no purge during the run, and no limits on the
 * browser and agent endpoints (the load comes from one address). The website endpoints keep their
 * default limits, so a run shows that a website's own traffic is never refused.
 */
export function ourEnv(port: number, adminPort: number, database: { url?: string; dataDir?: string }): Record<string, string> {
  return {
    PORT: String(port),
    HOST: '127.0.0.1',
    ISSUER: `http://127.0.0.1:${port}`,
    ADMIN_PORT: String(adminPort),
    ADMIN_TOKEN,
    JWT_SECRET: 'bench-jwt-secret-that-is-at-least-32-bytes',
    LOG_LEVEL: 'warn',
    PURGE_INTERVAL_SECONDS: '86400',
    RATE_LIMIT_AUTHORIZE_PER_IP: '0',
    RATE_LIMIT_CHECK_STATUS_PER_IP: '0',
    RATE_LIMIT_AUTHENTICATE_PER_IP: '0',
    RATE_LIMIT_AUTHENTICATE_PER_AGENT: '0',
    // Every connection comes from this one address: autocannon's, and the keep-alive sockets that fetch
    // left open while the run prepared its tokens (the cap refused some of autocannon's, counted as errors).
    MAX_CONNECTIONS_PER_IP: '0',
    ...(database.url ? { DATABASE_URL: database.url } : { DATA_DIR: database.dataDir! }),
  };
}

async function admin<T>(adminUrl: string, path: string, body: unknown): Promise<T> {
  const res = await fetch(`${adminUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  await expectStatus(res, 201);
  return (await res.json()) as T;
}

/** The grant cache's misses so far, from the admin listener's /metrics (Prometheus text). */
export async function grantCacheMisses(adminUrl: string): Promise<number> {
  const text = await (await expectStatus(await fetch(`${adminUrl}/metrics`), 200)).text();
  const line = /^agent_auth_grant_cache_reads_total\{result="miss"\} (\d+)/m.exec(text);
  if (!line) throw new Error('/metrics: no grant cache miss counter');
  return Number(line[1]);
}

/** One website and one agent, registered through the admin API; `keyed` is the same agent signing in with an Ed25519 key. */
export async function registerOurs(adminUrl: string) {
  const client = await admin<OurClient>(adminUrl, '/admin/clients', { name: 'Bench shop', redirect_uris: [REDIRECT_URI] });
  const agent = await admin<OurAgent>(adminUrl, '/admin/agents', { email: 'bench-owner@example.com', name: 'Bench agent' });
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  await admin(adminUrl, `/admin/agents/${agent.agent_id}/keys`, { jwk: publicKey.export({ format: 'jwk' }) });
  await admin(adminUrl, '/admin/resources', { resource: RESOURCE, name: 'Bench MCP' });
  return { client, agent, keyed: { ...agent, key: await keyFromPrivateKey(privateKey) } };
}

/** GET /authorize as a browser: the request id from the page and the binding cookie (for `resource`, RFC 8707, when given). */
export async function authorizePage(base: string, client: OurClient, resource?: string) {
  const jar = new CookieJar();
  const { verifier, challenge } = pkce();
  const query = new URLSearchParams({
    client_id: client.client_id,
    redirect_uri: REDIRECT_URI,
    response_type: 'code',
    state: 'bench-state',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    scope: 'openid email',
  });
  if (resource) query.set('resource', resource);
  const page = await expectStatus(await send(`${base}/authorize?${query}`), 200);
  jar.store(page);
  const requestId = /<meta name="request-id" content="([^"]+)">/.exec(await page.text())?.[1];
  if (!requestId) throw new Error('no request id on the authorization page');
  return { jar, verifier, requestId };
}

/** POST /api/agent/authenticate: the agent's back-channel step, with its secret or an assertion. */
export async function authenticate(base: string, agent: OurAgent, requestId: string) {
  const proof = agent.key
    ? { agent_assertion: await createAssertion(agent.key, { agentId: agent.agent_id, issuer: base, requestId }) }
    : { agent_secret: agent.agent_secret };
  const res = await send(`${base}/api/agent/authenticate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ request_id: requestId, agent_id: agent.agent_id, ...proof, model: 'bench-model' }),
  });
  await expectStatus(res, 200);
}

/** GET /api/check-status as the sign-in page asks it before it completes: the agent has authenticated. */
export async function checkStatus(base: string, requestId: string) {
  const res = await expectStatus(await send(`${base}/api/check-status?request_id=${encodeURIComponent(requestId)}`), 200);
  const { status } = (await res.json()) as { status: string };
  if (status !== 'authenticated') throw new Error(`check-status: ${status}`);
}

/** GET /authorize/complete as the browser: the code from the redirect to the website. */
export async function complete(base: string, jar: CookieJar, requestId: string): Promise<string> {
  const res = await send(`${base}/authorize/complete?request_id=${encodeURIComponent(requestId)}`, { headers: { cookie: jar.header() } });
  await expectStatus(res, 302);
  const code = new URL(res.headers.get('location')!).searchParams.get('code');
  if (!code) throw new Error(`no code in ${res.headers.get('location')}`);
  return code;
}

/** authorize (browser), authenticate (agent), check-status and complete (browser): the code and its verifier. */
export async function signInToCode(base: string, client: OurClient, agent: OurAgent, resource?: string) {
  const { jar, verifier, requestId } = await authorizePage(base, client, resource);
  await authenticate(base, agent, requestId);
  await checkStatus(base, requestId);
  return { code: await complete(base, jar, requestId), verifier };
}

export function codeExchangeBody(client: OurClient, code: string, verifier: string, resource?: string): string {
  return form({
    ...(resource && { resource }),
    grant_type: 'authorization_code',
    code,
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
    client_id: client.client_id,
    client_secret: client.client_secret,
  });
}

export function refreshBody(client: ClientCredentials, refreshToken: string): string {
  return form({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: client.client_id, client_secret: client.client_secret });
}

export function introspectBody(client: ClientCredentials, token: string): string {
  return form({ token, client_id: client.client_id, client_secret: client.client_secret });
}

export async function exchangeCode(base: string, client: OurClient, code: string, verifier: string, resource?: string): Promise<TokenSet> {
  const res = await send(`${base}/token`, { method: 'POST', headers: FORM, body: codeExchangeBody(client, code, verifier, resource) });
  return (await (await expectStatus(res, 200)).json()) as TokenSet;
}

export async function userinfo(base: string, accessToken: string) {
  const res = await send(`${base}/userinfo`, { headers: { authorization: `Bearer ${accessToken}` } });
  return (await (await expectStatus(res, 200)).json()) as { sub: string; email?: string };
}

/** The whole sign-in as a website and an agent see it, ending with the website's userinfo call. */
export async function fullSignIn(base: string, client: OurClient, agent: OurAgent) {
  const { code, verifier } = await signInToCode(base, client, agent);
  const tokens = await exchangeCode(base, client, code, verifier);
  const info = await userinfo(base, tokens.access_token);
  if (!info.email) throw new Error('userinfo without email');
  return tokens;
}

/**
 * The sign-in an MCP client makes for a resource, ending as the MCP server does: its JWT access token
 * verified by the website kit (`verify`), with no call to us.
 */
export async function resourceSignIn(base: string, client: OurClient, agent: OurAgent, verify: (token: string) => Promise<unknown>) {
  const { code, verifier } = await signInToCode(base, client, agent, RESOURCE);
  const tokens = await exchangeCode(base, client, code, verifier, RESOURCE);
  await verify(tokens.access_token);
  return tokens;
}

export type HotRead = 'userinfo' | 'introspect';

/** The two hot reads of ours, for the token `access` of `client`. */
export const ourHotReads = (base: string, client: ClientCredentials, access: string): Record<HotRead, Target> => ({
  userinfo: { url: `${base}/userinfo`, headers: { authorization: `Bearer ${access}` } },
  introspect: { url: `${base}/introspect`, method: 'POST', headers: FORM, body: introspectBody(client, access) },
});
