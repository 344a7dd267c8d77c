/**
 * DPoP (RFC 9449) with unmodified client libraries against the real listening server, with server
 * nonces off and on: openid-client 6 (getDPoPHandle, which retries use_dpop_nonce by itself) and
 * oauth4webapi (DPoP(), the retry written as its documentation shows). Each signs in, refreshes and
 * reads /userinfo; a copy of its tokens without the key gets nothing.
 */
import { calculateJwkThumbprint, decodeJwt, exportJWK } from 'jose';
import * as oauth from 'oauth4webapi';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { type ListeningServer, startListeningServer } from '../helpers/listening.js';
import { browserAndAgent } from '../helpers/sign-in.js';

describe.each(['off', 'on'] as const)(`DPoP with real client libraries, DPOP_NONCE=%s (${storeName})`, (nonce) => {
  let server: ListeningServer;
  beforeAll(async () => {
    server = await startListeningServer({ DPOP_NONCE: nonce });
  });
  afterAll(() => server?.close());

  it('openid-client 6: one line (getDPoPHandle) binds the sign-in, the refresh and /userinfo to the key', async () => {
    const registered = await server.createClient(['https://rp.example/dpop/callback']);
    const agent = await server.createAgent('dpop-oidc@example.com');
    const config = await client.discovery(
      new URL(server.issuer),
      registered.client_id,
      undefined,
      client.ClientSecretPost(registered.client_secret),
      { algorithm: 'oauth2', execute: [client.allowInsecureRequests] },
    );
    expect(config.serverMetadata().dpop_signing_alg_values_supported).toContain('ES256');
    // The one line a website adds:
    const DPoP = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));

    const verifier = client.randomPKCECodeVerifier();
    const state = client.randomState();
    const url = client.buildAuthorizationUrl(config, {
      redirect_uri: 'https://rp.example/dpop/callback',
      scope: 'openid email',
      code_challenge: await client.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    });
    const callback = await browserAndAgent(server.issuer, url, agent);
    const tokens = await client.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state }, undefined, { DPoP });
    expect(tokens.token_type).toBe('dpop');
    expect(decodeJwt(tokens.access_token).cnf).toMatchObject({ jkt: expect.any(String) });

    expect(await client.fetchUserInfo(config, tokens.access_token, agent.agent_id, { DPoP })).toEqual({
      sub: agent.agent_id,
      email: 'dpop-oidc@example.com',
    });
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP });
    expect(refreshed.token_type).toBe('dpop');
    expect(await client.fetchUserInfo(config, refreshed.access_token, agent.agent_id, { DPoP })).toMatchObject({ sub: agent.agent_id });

    // A copy of the tokens without the key: as a bearer token, with another key, at refresh.
    const copied = await client.fetchUserInfo(config, refreshed.access_token, agent.agent_id).catch((e) => e);
    expect(copied).toMatchObject({ status: 401 });
    const thief = client.getDPoPHandle(config, await client.randomDPoPKeyPair('ES256'));
    await expect(client.fetchUserInfo(config, refreshed.access_token, agent.agent_id, { DPoP: thief })).rejects.toMatchObject({ status: 401 });
    await expect(client.refreshTokenGrant(config, refreshed.refresh_token!, undefined, { DPoP: thief })).rejects.toMatchObject({
      error: 'invalid_grant',
    });
    await expect(client.refreshTokenGrant(config, refreshed.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    // The holder of the key still refreshes: the refused attempts spent nothing.
    expect((await client.refreshTokenGrant(config, refreshed.refresh_token!, undefined, { DPoP })).token_type).toBe('dpop');
  });

  it('oauth4webapi: DPoP() with EdDSA and dpop_jkt at /authorize, its nonce retry, refresh and /userinfo', async () => {
    const registered = await server.createClient(['https://rp.example/o4w-dpop/callback']);
    const agent = await server.createAgent('dpop-o4w@example.com');
    const issuer = new URL(server.issuer);
    const http = { [oauth.allowInsecureRequests]: true };
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...http }));
    const c: oauth.Client = { client_id: registered.client_id };
    const clientAuth = oauth.ClientSecretPost(registered.client_secret);
    const keyPair = await oauth.generateKeyPair('EdDSA');
    const DPoP = oauth.DPoP(c, keyPair);

    /** The library's documented pattern: on use_dpop_nonce it has kept the nonce, so the call is made once more. */
    async function retryingNonce<T>(call: () => Promise<T>): Promise<T> {
      try {
        return await call();
      } catch (err) {
        if (oauth.isDPoPNonceError(err)) return call();
        throw err;
      }
    }

    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      client_id: c.client_id,
      redirect_uri: 'https://rp.example/o4w-dpop/callback',
      response_type: 'code',
      scope: 'email',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      dpop_jkt: await calculateJwkThumbprint(await exportJWK(keyPair.publicKey)),
    }).toString();
    const params = oauth.validateAuthResponse(as, c, await browserAndAgent(server.issuer, url, agent), state);

    const tokens = await retryingNonce(async () =>
      oauth.processAuthorizationCodeResponse(
        as,
        c,
        await oauth.authorizationCodeGrantRequest(as, c, clientAuth, params, 'https://rp.example/o4w-dpop/callback', verifier, { DPoP, ...http }),
      ),
    );
    expect(tokens.token_type).toBe('dpop');

    const info = await retryingNonce(async () =>
      oauth.processUserInfoResponse(as, c, agent.agent_id, await oauth.userInfoRequest(as, c, tokens.access_token, { DPoP, ...http })),
    );
    expect(info).toEqual({ sub: agent.agent_id, email: 'dpop-o4w@example.com' });

    const refreshed = await retryingNonce(async () =>
      oauth.processRefreshTokenResponse(as, c, await oauth.refreshTokenGrantRequest(as, c, clientAuth, tokens.refresh_token!, { DPoP, ...http })),
    );
    expect(refreshed.token_type).toBe('dpop');
    const resource = await oauth.protectedResourceRequest(refreshed.access_token, 'GET', new URL(as.userinfo_endpoint!), new Headers(), null, {
      DPoP,
      ...http,
    });
    expect(resource.status).toBe(200);
    // The same token as a bearer token is refused, with the DPoP challenge.
    const bearer = await fetch(as.userinfo_endpoint!, { headers: { authorization: `Bearer ${refreshed.access_token}` } });
    expect(bearer.status).toBe(401);
    expect(bearer.headers.get('www-authenticate')).toMatch(/^DPoP error="invalid_token"/);
  });
});
