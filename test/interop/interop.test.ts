/**
 * Unmodified client libraries complete the whole flow against the real listening server.
 * Each library builds the authorization request and handles the callback and every back-channel
 * call itself; the test only plays the user's browser and the agent in between.
 * The one relaxation everywhere is plain http, which every library refuses unless told: the
 * server listens on 127.0.0.1 here. docs/interop.md records versions, results and findings.
 */
import { Auth, type AuthConfig } from '@auth/core';
import type { Account } from '@auth/core/types';
import {
  auth,
  discoverAuthorizationServerMetadata,
  exchangeAuthorization,
  type OAuthClientProvider,
  refreshAuthorization,
  startAuthorization,
} from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
// Access tokens are read without verifying: the signing secret is the server's, not the client's.
import { decodeJwt } from 'jose';
import * as oauth from 'oauth4webapi';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { type ListeningServer, startListeningServer } from '../helpers/listening.js';
import { browserAndAgent as agentSignIn, CookieJar } from '../helpers/sign-in.js';

type Agent = Awaited<ReturnType<ListeningServer['createAgent']>>;

let server: ListeningServer;
beforeAll(async () => {
  server = await startListeningServer();
});
afterAll(() => server?.close());

const browserAndAgent = (authorizationUrl: URL | string, agent: Agent) => agentSignIn(server.issuer, authorizationUrl, agent);

describe(`oauth4webapi (${storeName})`, () => {
  it('discovers, signs in with PKCE/state/iss, exchanges, reads userinfo, refreshes, introspects and revokes', async () => {
    const registered = await server.createClient(['https://rp.example/callback']);
    const agent = await server.createAgent('o4w@example.com');
    const issuer = new URL(server.issuer);
    const http = { [oauth.allowInsecureRequests]: true };

    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...http }));
    expect(as.authorization_response_iss_parameter_supported).toBe(true);
    const c: oauth.Client = { client_id: registered.client_id };
    const clientAuth = oauth.ClientSecretPost(registered.client_secret);

    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      client_id: c.client_id,
      redirect_uri: 'https://rp.example/callback',
      response_type: 'code',
      scope: 'openid email',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    const callback = await browserAndAgent(url, agent);

    // The library refuses a forged state or issuer before anything is exchanged.
    expect(() => oauth.validateAuthResponse(as, c, callback, oauth.generateRandomState())).toThrow(/state/);
    const wrongIss = new URL(callback);
    wrongIss.searchParams.set('iss', 'https://evil.example');
    expect(() => oauth.validateAuthResponse(as, c, wrongIss, state)).toThrow(/iss/);
    const params = oauth.validateAuthResponse(as, c, callback, state);

    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      c,
      await oauth.authorizationCodeGrantRequest(as, c, clientAuth, params, 'https://rp.example/callback', verifier, http),
    );
    expect(tokens.token_type).toBe('bearer'); // oauth4webapi lower-cases it
    expect(decodeJwt(tokens.access_token)).toMatchObject({ sub: agent.agent_id, iss: server.issuer, client_id: c.client_id });

    const info = await oauth.processUserInfoResponse(as, c, agent.agent_id, await oauth.userInfoRequest(as, c, tokens.access_token, http));
    expect(info).toEqual({ sub: agent.agent_id, email: 'o4w@example.com' });
    const resource = await oauth.protectedResourceRequest(tokens.access_token, 'GET', new URL(as.userinfo_endpoint!), new Headers(), null, http);
    expect(resource.status).toBe(200);
    expect(await resource.json()).toEqual({ sub: agent.agent_id, email: 'o4w@example.com' });

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      c,
      await oauth.refreshTokenGrantRequest(as, c, clientAuth, tokens.refresh_token!, http),
    );
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);

    const active = await oauth.processIntrospectionResponse(as, c, await oauth.introspectionRequest(as, c, clientAuth, refreshed.access_token, http));
    expect(active).toMatchObject({ active: true, sub: agent.agent_id, client_id: c.client_id, token_type: 'access_token' });

    await oauth.processRevocationResponse(await oauth.revocationRequest(as, c, clientAuth, refreshed.access_token, http));
    const revoked = await oauth.processIntrospectionResponse(
      as,
      c,
      await oauth.introspectionRequest(as, c, clientAuth, refreshed.access_token, http),
    );
    expect(revoked).toEqual({ active: false });
    // Its successor has been used, so the old refresh token coming back is reuse, not a retry: the
    // library surfaces the server's invalid_grant.
    await oauth.processRefreshTokenResponse(as, c, await oauth.refreshTokenGrantRequest(as, c, clientAuth, refreshed.refresh_token!, http));
    await expect(
      oauth.processRefreshTokenResponse(as, c, await oauth.refreshTokenGrantRequest(as, c, clientAuth, tokens.refresh_token!, http)),
    ).rejects.toMatchObject({ error: 'invalid_grant' });
  });
});

describe(`openid-client (${storeName})`, () => {
  it('discovers, signs in, exchanges, fetches userinfo, refreshes, introspects and revokes', async () => {
    const registered = await server.createClient(['https://rp.example/oidc/callback']);
    const agent = await server.createAgent('oidc-client@example.com');
    const config = await client.discovery(
      new URL(server.issuer),
      registered.client_id,
      undefined,
      client.ClientSecretPost(registered.client_secret),
      { algorithm: 'oauth2', execute: [client.allowInsecureRequests] },
    );

    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: 'https://rp.example/oidc/callback',
      scope: 'openid email',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const callback = await browserAndAgent(url, agent);

    // openid-client wraps the oauth4webapi error that names the failed check.
    const forged = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: 'forged' }).catch((e) => e);
    expect(forged.cause.message).toMatch(/"state"/);
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.expiresIn()).toBeGreaterThan(3500);
    expect(tokens.scope).toBe('openid email');

    const info = await client.fetchUserInfo(config, tokens.access_token, agent.agent_id);
    expect(info).toEqual({ sub: agent.agent_id, email: 'oidc-client@example.com' });
    const mismatch = await client.fetchUserInfo(config, tokens.access_token, 'agent_someone_else').catch((e) => e);
    expect(mismatch.cause.message).toMatch(/"sub"/);

    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    expect(decodeJwt(refreshed.access_token).sub).toBe(agent.agent_id);

    const introspected = await client.tokenIntrospection(config, refreshed.refresh_token!);
    expect(introspected).toMatchObject({ active: true, sub: agent.agent_id, token_type: 'refresh_token' });
    await client.tokenRevocation(config, refreshed.refresh_token!);
    expect(await client.tokenIntrospection(config, refreshed.refresh_token!)).toEqual({ active: false });
    // Revoking the refresh token took its family, the access token with it.
    expect(await client.tokenIntrospection(config, refreshed.access_token)).toEqual({ active: false });
  });
});

describe(`Auth.js core (${storeName})`, () => {
  // client_secret_post is what we advertise; Basic (Auth.js's default) is accepted too (docs/protocol.md, POST /token).
  it.each(['client_secret_post', 'client_secret_basic'] as const)(
    'signs a user in through a custom OAuth provider (PKCE, state, %s) and reads the email',
    async (method) => {
      const site = 'https://rp.example';
      const registered = await server.createClient([`${site}/auth/callback/agent-auth`]);
      const email = `authjs-${method}@example.com`;
      const agent = await server.createAgent(email);
      const accounts: Account[] = [];
      const errors: unknown[] = [];
      const issuer = server.issuer;
      const config: AuthConfig = {
        basePath: '/auth',
        secret: 'authjs-test-secret-0123456789abcdef',
        trustHost: true,
        logger: { error: (e) => errors.push(e), warn: () => {}, debug: () => {} },
        providers: [
          {
            id: 'agent-auth',
            name: 'agent-auth',
            type: 'oauth',
            issuer,
            clientId: registered.client_id,
            clientSecret: registered.client_secret,
            checks: ['pkce', 'state'],
            client: { token_endpoint_auth_method: method },
            // Explicit endpoints: for type "oauth" Auth.js wants userinfo named, and then takes none from discovery.
            authorization: { url: `${issuer}/authorize`, params: { scope: 'openid email' } },
            token: `${issuer}/token`,
            userinfo: `${issuer}/userinfo`,
            profile: (p: { sub: string; email?: string }) => ({ id: p.sub, email: p.email }),
          },
        ],
        callbacks: {
          jwt({ token, account }) {
            if (account) accounts.push(account);
            return token;
          },
        },
      };
      const jar = new CookieJar();
      async function call(path: string, init: RequestInit = {}) {
        const url = path.startsWith('http') ? path : `${site}${path}`;
        const res = await Auth(new Request(url, { ...init, headers: { ...init.headers, cookie: jar.header() } }), config);
        jar.store(res);
        return res;
      }

      const { csrfToken } = await (await call('/auth/csrf')).json();
      const signin = await call('/auth/signin/agent-auth', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ csrfToken, callbackUrl: `${site}/account` }),
      });
      expect(signin.status).toBe(302);
      const authorizationUrl = new URL(signin.headers.get('location')!);
      expect(authorizationUrl.origin + authorizationUrl.pathname).toBe(`${issuer}/authorize`);
      expect(authorizationUrl.searchParams.get('code_challenge_method')).toBe('S256');
      expect(authorizationUrl.searchParams.get('state')).toBeTruthy();

      const callback = await browserAndAgent(authorizationUrl, agent);
      expect(callback.origin + callback.pathname).toBe(`${site}/auth/callback/agent-auth`);
      const done = await call(callback.href);
      expect(errors).toEqual([]);
      expect(done.status).toBe(302);
      expect(done.headers.get('location')).toBe(`${site}/account`);

      const session = await (await call('/auth/session')).json();
      expect(session.user.email).toBe(email);
      expect(accounts).toHaveLength(1);
      expect(accounts[0]).toMatchObject({ provider: 'agent-auth', providerAccountId: agent.agent_id, token_type: 'bearer' });
      expect(decodeJwt(accounts[0].access_token!).sub).toBe(agent.agent_id);
    },
  );
});

describe(`MCP TypeScript SDK client auth (${storeName})`, () => {
  it('discovers, authorizes, exchanges the code and refreshes', async () => {
    const redirectUrl = 'http://localhost:33418/oauth/callback';
    const registered = await server.createClient([redirectUrl]);
    const agent = await server.createAgent('mcp@example.com');
    const clientInformation = { client_id: registered.client_id, client_secret: registered.client_secret };

    const metadata = await discoverAuthorizationServerMetadata(server.issuer);
    expect(metadata?.issuer).toBe(server.issuer);
    const state = 'mcp-state-0123456789';
    const { authorizationUrl, codeVerifier } = await startAuthorization(server.issuer, {
      metadata,
      clientInformation,
      redirectUrl,
      scope: 'openid email',
      state,
    });

    // The SDK leaves the callback to the application: it compares state and issuer itself.
    const callback = await browserAndAgent(authorizationUrl, agent);
    expect(callback.searchParams.get('state')).toBe(state);
    expect(callback.searchParams.get('iss')).toBe(metadata!.issuer);

    const tokens = await exchangeAuthorization(server.issuer, {
      metadata,
      clientInformation,
      authorizationCode: callback.searchParams.get('code')!,
      codeVerifier,
      redirectUri: redirectUrl,
    });
    expect(tokens).toMatchObject({ token_type: 'Bearer', scope: 'openid email', expires_in: 3600 });
    expect(decodeJwt(tokens.access_token).sub).toBe(agent.agent_id);

    const refreshed = await refreshAuthorization(server.issuer, { metadata, clientInformation, refreshToken: tokens.refresh_token! });
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    const info = await fetch(metadata!.userinfo_endpoint as string, { headers: { authorization: `Bearer ${refreshed.access_token}` } });
    expect(await info.json()).toEqual({ sub: agent.agent_id, email: 'mcp@example.com' });
  });

  it('signs in through auth(), the entry point an MCP client calls, with a pre-registered client', async () => {
    const redirectUrl = 'http://localhost:33419/oauth/callback';
    const registered = await server.createClient([redirectUrl]);
    const agent = await server.createAgent('mcp-auth@example.com');
    // What an MCP client application keeps; the SDK drives discovery, PKCE, state and the exchange.
    let verifier = '';
    let tokens: OAuthTokens | undefined;
    let sentTo: URL | undefined;
    const provider: OAuthClientProvider = {
      redirectUrl,
      clientMetadata: { redirect_uris: [redirectUrl], scope: 'openid email', token_endpoint_auth_method: 'client_secret_post' },
      clientInformation: () => ({ client_id: registered.client_id, client_secret: registered.client_secret }),
      tokens: () => tokens,
      saveTokens: (t) => void (tokens = t),
      // The SDK sends state only when the provider has one; docs/protocol.md requires it.
      state: () => 'mcp-auth-state-0123456789',
      redirectToAuthorization: (url) => void (sentTo = url),
      saveCodeVerifier: (v) => void (verifier = v),
      codeVerifier: () => verifier,
    };
    // The MCP server (a resource server) publishes no RFC 9728 metadata here, so the SDK falls
    // back to the authorization server at the server URL's origin: ours.
    const serverUrl = `${server.issuer}/mcp`;
    expect(await auth(provider, { serverUrl })).toBe('REDIRECT');
    expect(sentTo!.origin + sentTo!.pathname).toBe(`${server.issuer}/authorize`);

    const callback = await browserAndAgent(sentTo!, agent);
    expect(callback.searchParams.get('state')).toBe('mcp-auth-state-0123456789');
    expect(await auth(provider, { serverUrl, authorizationCode: callback.searchParams.get('code')! })).toBe('AUTHORIZED');
    expect(decodeJwt(tokens!.access_token).sub).toBe(agent.agent_id);
    const info = await fetch(`${server.issuer}/userinfo`, { headers: { authorization: `Bearer ${tokens!.access_token}` } });
    expect(await info.json()).toEqual({ sub: agent.agent_id, email: 'mcp-auth@example.com' });
  });
});
