/**
 * Unmodified OpenID Connect client libraries against the listening server in OpenID Connect mode,
 * with each signing algorithm: openid-client 6 and 5 (its callback() and its Passport strategy),
 * and the two example websites, Auth.js (type "oidc") and Better Auth (genericOAuth with only a
 * discovery URL). Each ID token is also verified here against the published JWKS. The examples run
 * in the default mode too. docs/interop.md records the configurations.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import * as client from 'openid-client';
import { generators, Issuer, Strategy, type TokenSet, type UserinfoResponse } from 'openid-client-5';
import passport from 'passport';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAuthjsSite } from '../../examples/authjs/site.js';
import { startBetterAuthSite } from '../../examples/better-auth/site.js';
import type { SiteOptions } from '../../examples/shared/site.js';
import { storeName } from '../helpers/database.js';
import { freePort, type ListeningServer, startListeningServer } from '../helpers/listening.js';
import { browserAndAgent, CookieJar } from '../helpers/sign-in.js';

type Agent = Awaited<ReturnType<ListeningServer['createAgent']>>;
const SECRET = 'example-site-secret-0123456789abcdef';

/** The ID token verified against the server's JWKS, as a relying party does; returns its claims. */
async function verifiedIdToken(server: ListeningServer, idToken: string, clientId: string, alg: string) {
  const jwks = createRemoteJWKSet(new URL(`${server.issuer}/.well-known/jwks.json`));
  const { payload } = await jwtVerify(idToken, jwks, { issuer: server.issuer, audience: clientId, algorithms: [alg] });
  return payload;
}

/**
 * A website's sign-in seen from the browser: `start` is the website's answer that sends the browser
 * to /authorize; after the agent, the callback goes back to the website, which redirects to its home
 * page. Returns that page's HTML.
 */
async function signInAtWebsite(server: ListeningServer, jar: CookieJar, start: Response, agent: Agent, siteUrl: string) {
  expect(start.status, await start.clone().text()).toBeGreaterThanOrEqual(300);
  const authorizationUrl = new URL(start.headers.get('location')!);
  expect(authorizationUrl.origin).toBe(server.issuer);
  const callback = await browserAndAgent(server.issuer, authorizationUrl, agent);
  expect(callback.origin).toBe(siteUrl);
  const done = await jar.fetch(callback);
  expect(done.status, await done.clone().text()).toBe(302);
  const home = await jar.fetch(new URL(done.headers.get('location')!, siteUrl));
  expect(home.status).toBe(200);
  return home.text();
}

/** The Auth.js example's flow: the home page's form posts the CSRF token to the sign-in endpoint. */
async function authjsSignIn(server: ListeningServer, siteUrl: string, agent: Agent) {
  const jar = new CookieJar();
  const form = await (await jar.fetch(`${siteUrl}/`)).text();
  const fields = Object.fromEntries([...form.matchAll(/name="(\w+)" value="([^"]*)"/g)].map((m) => [m[1], m[2]]));
  const start = await jar.fetch(`${siteUrl}/auth/signin/agent-auth`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields),
  });
  return signInAtWebsite(server, jar, start, agent, siteUrl);
}

async function betterAuthSignIn(server: ListeningServer, siteUrl: string, agent: Agent) {
  const jar = new CookieJar();
  return signInAtWebsite(server, jar, await jar.fetch(`${siteUrl}/login`), agent, siteUrl);
}

/**
 * An example website started for a client registered with its redirect URI, and a user signed in
 * there by an agent of `email`: the website's home page must name that email. The site is closed after.
 */
async function signInAtExample<Site extends { url: string; close(): Promise<void> }>(
  server: ListeningServer,
  example: { callbackPath: string; start(options: SiteOptions): Promise<Site>; signIn: typeof betterAuthSignIn },
  oidc: boolean,
  email: string,
) {
  const port = await freePort();
  const agent = await server.createAgent(email);
  const registered = await server.createClient([`http://127.0.0.1:${port}${example.callbackPath}`]);
  const site = await example.start({
    issuer: server.issuer,
    clientId: registered.client_id,
    clientSecret: registered.client_secret,
    oidc,
    port,
    secret: SECRET,
  });
  try {
    expect(await example.signIn(server, site.url, agent)).toContain(`Signed in as <strong id="email">${email}</strong>`);
    return { agent, registered, site };
  } finally {
    await site.close();
  }
}

const betterAuthExample = { callbackPath: '/api/auth/callback/agent-auth', start: startBetterAuthSite, signIn: betterAuthSignIn };
/** The Auth.js example, recording the ID tokens of its sign-ins in `idTokens`. */
const authjsExample = (idTokens: string[] = []) => ({
  callbackPath: '/auth/callback/agent-auth',
  start: (options: SiteOptions) => startAuthjsSite({ ...options, events: { signIn: ({ account }) => void idTokens.push(account!.id_token!) } }),
  signIn: authjsSignIn,
});

describe.each(['RS256', 'ES256', 'EdDSA'] as const)(`OpenID Connect mode, %s (${storeName})`, (alg) => {
  let server: ListeningServer;
  beforeAll(async () => {
    server = await startListeningServer({ ID_TOKEN_SIGNING_ALG: alg });
  });
  afterAll(() => server?.close());

  it('openid-client 6: OpenID Connect discovery, nonce, idTokenExpected and the signature checked against the JWKS', async () => {
    const registered = await server.createClient(['https://rp.example/oidc6/callback']);
    const agent = await server.createAgent('oidc6@example.com');
    const config = await client.discovery(new URL(server.issuer), registered.client_id, registered.client_secret, undefined, {
      execute: [client.allowInsecureRequests, client.enableNonRepudiationChecks],
    });
    expect(config.serverMetadata().id_token_signing_alg_values_supported).toEqual(['RS256', 'ES256', 'EdDSA']);

    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const nonce = client.randomNonce();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: 'https://rp.example/oidc6/callback',
      scope: 'openid email',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    const callback = await browserAndAgent(server.issuer, url, agent);
    const tokens = await client.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedState: state,
      expectedNonce: nonce,
      idTokenExpected: true,
    });
    expect(tokens.claims()).toMatchObject({ sub: agent.agent_id, email: 'oidc6@example.com', nonce, model: 'interop-model' });
    await verifiedIdToken(server, tokens.id_token!, registered.client_id, 'RS256');
    expect(await client.fetchUserInfo(config, tokens.access_token, agent.agent_id)).toEqual({ sub: agent.agent_id, email: 'oidc6@example.com' });
  });

  it("openid-client 5: Issuer.discover and client.callback() check the ID token's signature, nonce and at_hash", async () => {
    const registered = await server.createClient(['https://rp.example/oidc5/callback']);
    const agent = await server.createAgent('oidc5@example.com');
    const issuer = await Issuer.discover(server.issuer);
    const rp = new issuer.Client({
      client_id: registered.client_id,
      client_secret: registered.client_secret,
      redirect_uris: ['https://rp.example/oidc5/callback'],
      response_types: ['code'],
      // Nothing about the algorithm: its default is RS256, whatever the discovery document says, and
      // a website that registered none gets RS256 (OpenID Connect Registration §2).
    });
    const verifier = generators.codeVerifier();
    const state = generators.state();
    const nonce = generators.nonce();
    const url = rp.authorizationUrl({
      scope: 'openid email',
      code_challenge: generators.codeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    const callback = await browserAndAgent(server.issuer, url, agent);
    const params = rp.callbackParams(callback.href);
    await expect(rp.callback('https://rp.example/oidc5/callback', params, { code_verifier: verifier, state, nonce: 'forged' })).rejects.toThrow(
      /nonce mismatch/,
    );

    // The code was spent by the refused attempt: a new sign-in.
    const again = await browserAndAgent(server.issuer, url, agent);
    const tokens = await rp.callback('https://rp.example/oidc5/callback', rp.callbackParams(again.href), { code_verifier: verifier, state, nonce });
    expect(tokens.claims()).toMatchObject({ sub: agent.agent_id, aud: registered.client_id, email: 'oidc5@example.com', nonce });
    await verifiedIdToken(server, tokens.id_token!, registered.client_id, 'RS256');
    expect(await rp.userinfo(tokens)).toEqual({ sub: agent.agent_id, email: 'oidc5@example.com' });
  });

  it(`openid-client 5: a website registered with ${alg} gets ${alg} ID tokens, one without gets RS256, whatever ID_TOKEN_SIGNING_ALG says`, async () => {
    const issuer = await Issuer.discover(server.issuer);
    const signInWith = async (chosen: typeof alg | undefined) => {
      const created = await server.adminCall('POST', '/admin/clients', {
        name: `Website ${chosen ?? 'without a choice'}`,
        redirect_uris: ['https://rp.example/alg/callback'],
        ...(chosen ? { id_token_signed_response_alg: chosen } : {}),
      });
      // The website's view names the algorithm its ID tokens get.
      expect(created.json.id_token_signed_response_alg).toBe(chosen ?? 'RS256');
      const rp = new issuer.Client({
        client_id: created.json.client_id,
        client_secret: created.json.client_secret,
        redirect_uris: ['https://rp.example/alg/callback'],
        response_types: ['code'],
        ...(chosen ? { id_token_signed_response_alg: chosen } : {}),
      });
      const verifier = generators.codeVerifier();
      const nonce = generators.nonce();
      const url = rp.authorizationUrl({
        scope: 'openid',
        code_challenge: generators.codeChallenge(verifier),
        code_challenge_method: 'S256',
        state: 's',
        nonce,
      });
      const callback = await browserAndAgent(server.issuer, url, await server.createAgent());
      const tokens = await rp.callback('https://rp.example/alg/callback', rp.callbackParams(callback.href), {
        code_verifier: verifier,
        state: 's',
        nonce,
      });
      return JSON.parse(Buffer.from(tokens.id_token!.split('.')[0], 'base64url').toString()).alg;
    };
    expect(await signInWith(undefined)).toBe('RS256');
    expect(await signInWith(alg)).toBe(alg);
  });

  it("openid-client 5's Passport strategy signs a user in on a website", async () => {
    const port = await freePort();
    const siteUrl = `http://127.0.0.1:${port}`;
    const registered = await server.createClient([`${siteUrl}/callback`]);
    const agent = await server.createAgent('passport@example.com');
    const issuer = await Issuer.discover(server.issuer);
    const rp = new issuer.Client({
      client_id: registered.client_id,
      client_secret: registered.client_secret,
      redirect_uris: [`${siteUrl}/callback`],
      response_types: ['code'],
    });
    const signedIn: { tokens: TokenSet; userinfo: UserinfoResponse }[] = [];
    passport.use(
      `agent-auth-${alg}`,
      new Strategy(
        { client: rp, params: { scope: 'openid email' }, usePKCE: 'S256' },
        (tokens: TokenSet, userinfo: UserinfoResponse, done: (err: unknown, user?: object) => void) => {
          signedIn.push({ tokens, userinfo });
          done(null, { id: tokens.claims().sub, email: userinfo.email });
        },
      ),
    );

    // The smallest website that passport runs in: a session per cookie, /login, /callback and a home page.
    const sessions = new Map<string, Record<string, unknown>>();
    const site: Server = createServer((req: IncomingMessage & { session?: Record<string, unknown> }, res) => {
      const sid = /sid=(\w+)/.exec(req.headers.cookie ?? '')?.[1] ?? String(sessions.size + 1);
      if (!sessions.has(sid)) sessions.set(sid, {});
      req.session = sessions.get(sid);
      res.setHeader('set-cookie', `sid=${sid}; Path=/; HttpOnly`);
      if (req.url === '/') return void res.writeHead(200).end(JSON.stringify(req.session!.user ?? null));
      passport.authenticate(`agent-auth-${alg}`, (err: unknown, user: { email: string } | false) => {
        if (user) req.session!.user = user;
        res.writeHead(err || !user ? 401 : 302, { location: '/' }).end(String(err ?? ''));
      })(req, res, () => {});
    });
    await new Promise<void>((resolve) => site.listen(port, '127.0.0.1', resolve));
    try {
      const jar = new CookieJar();
      const home = await signInAtWebsite(server, jar, await jar.fetch(`${siteUrl}/login`), agent, siteUrl);
      expect(JSON.parse(home)).toEqual({ id: agent.agent_id, email: 'passport@example.com' });
      expect(signedIn).toHaveLength(1);
      expect(signedIn[0].userinfo).toEqual({ sub: agent.agent_id, email: 'passport@example.com' });
      await verifiedIdToken(server, signedIn[0].tokens.id_token!, registered.client_id, 'RS256');
    } finally {
      await new Promise((resolve) => site.close(resolve));
    }
  });

  it('Auth.js type "oidc" (examples/authjs): PKCE, state and nonce, the user from the ID token', async () => {
    const idTokens: string[] = [];
    const { agent, registered } = await signInAtExample(server, authjsExample(idTokens), true, 'authjs-oidc@example.com');
    expect(idTokens).toHaveLength(1);
    expect(await verifiedIdToken(server, idTokens[0], registered.client_id, 'RS256')).toMatchObject({
      sub: agent.agent_id,
      nonce: expect.any(String),
    });
  });

  it("Better Auth genericOAuth (examples/better-auth): only a discovery URL, the ID token verified, a session for the agent's email", async () => {
    const { agent, registered, site } = await signInAtExample(server, betterAuthExample, true, 'better-auth@example.com');
    expect(site.users()).toMatchObject([{ email: 'better-auth@example.com', emailVerified: false }]);
    const [account] = site.accounts();
    expect(account).toMatchObject({ providerId: 'agent-auth', accountId: agent.agent_id });
    expect(await verifiedIdToken(server, account.idToken!, registered.client_id, 'RS256')).toMatchObject({
      sub: agent.agent_id,
      nonce: expect.any(String),
    });
  });
});

describe(`the example websites in the default mode (${storeName})`, () => {
  let server: ListeningServer;
  beforeAll(async () => {
    server = await startListeningServer();
  });
  afterAll(() => server?.close());

  it('Auth.js type "oauth" with userinfo: {} takes everything else from discovery', async () => {
    const idTokens: string[] = [];
    await signInAtExample(server, authjsExample(idTokens), false, 'authjs-oauth@example.com');
    expect(idTokens).toEqual([undefined]);
  });

  it('Better Auth genericOAuth takes the user from /userinfo, told that the account id is sub', async () => {
    const { agent, site } = await signInAtExample(server, betterAuthExample, false, 'better-auth-oauth@example.com');
    expect(site.accounts()).toMatchObject([{ providerId: 'agent-auth', accountId: agent.agent_id }]);
    expect(site.accounts()[0].idToken).toBeUndefined();
  });
});
