/**
 * OpenID Connect mode (ID_TOKEN_SIGNING_ALG) with each algorithm, and the default mode beside it:
 * ID tokens and their claims, discovery, the JWKS, nonce, and key rotation across instances.
 */
import { createHash } from 'node:crypto';
import { createLocalJWKSet, decodeProtectedHeader, type JSONWebKeySet, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { purgeExpired } from '../../src/jobs/purge.js';
import { openSigningKeys } from '../../src/oidc/signing-keys.js';
import { exchangeCode, refresh } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, completeInBrowser, startAuthorize } from '../helpers/flow.js';
import { closeAll, ISSUER, startTestServer, startTwoInstances, type TestServer } from '../helpers/server.js';

/** A browser sign-in with these /authorize parameters, exchanged for tokens. */
async function signIn(server: TestServer, authorize: Record<string, string> = {}, model = 'oidc-model-1') {
  const client = await server.createClient();
  const agent = await server.createAgent();
  const before = Math.floor(Date.now() / 1000);
  const started = await startAuthorize(server, client, authorize);
  expect(started.res.statusCode, started.res.body).toBe(200);
  const auth = await agentAuthenticate(server, { request_id: started.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret, model });
  expect(auth.statusCode).toBe(200);
  const { code } = await completeInBrowser(server, started.requestId, started.cookie);
  const res = await exchangeCode(server, client, code!, started.verifier);
  expect(res.statusCode, res.body).toBe(200);
  return { client, agent, before, tokens: res.json() };
}

async function jwks(server: TestServer): Promise<JSONWebKeySet> {
  const res = await server.app.inject('/.well-known/jwks.json');
  expect(res.statusCode).toBe(200);
  return res.json();
}

describe(`default mode, ID_TOKEN_SIGNING_ALG unset (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it('issues no ID token, ignores nonce, publishes no key and says it is no OpenID Provider', async () => {
    const { tokens } = await signIn(server, { scope: 'openid email', nonce: 'n'.repeat(600) });
    expect(Object.keys(tokens).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'scope', 'token_type']);
    expect(await jwks(server)).toEqual({ keys: [] });

    const rfc8414 = (await server.app.inject('/.well-known/oauth-authorization-server')).json();
    expect(rfc8414.scopes_supported).toEqual(['openid', 'email', 'profile']);
    const discovery = (await server.app.inject('/.well-known/openid-configuration')).json();
    expect(discovery).toEqual({ ...rfc8414, scopes_supported: ['email', 'profile'] });
    expect(discovery).not.toHaveProperty('id_token_signing_alg_values_supported');
  });

  it('refuses any other algorithm at start, naming the variable', () => {
    for (const alg of ['HS256', 'none', 'rs256']) {
      expect(() => loadConfig({ ID_TOKEN_SIGNING_ALG: alg, DATA_DIR: 'memory', ADMIN_TOKEN: 'x'.repeat(16) })).toThrow(
        /^invalid configuration: ID_TOKEN_SIGNING_ALG /,
      );
    }
  });

  it('has no signing keys to rotate', async () => {
    const res = await server.adminCall('POST', '/admin/keys/rotate');
    expect(res.statusCode).toBe(409);
    expect(res.json).toEqual({ error: 'oidc_disabled', error_description: expect.stringContaining('ID_TOKEN_SIGNING_ALG') });
    expect((await server.adminCall('GET', '/admin/keys')).statusCode).toBe(409);
  });
});

// The hash at_hash is built on: SHA-256 for RS256 and ES256, SHA-512 for Ed25519.
const HASH = { RS256: 'sha256', ES256: 'sha256', EdDSA: 'sha512' } as const;
const KEY_TYPE = { RS256: 'RSA', ES256: 'EC', EdDSA: 'OKP' } as const;

describe.each(['RS256', 'ES256', 'EdDSA'] as const)(`OpenID Connect mode, %s (${storeName})`, (alg) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ ID_TOKEN_SIGNING_ALG: alg });
  });
  afterAll(() => server.close());

  it('publishes one public key per algorithm with kid, alg and use, RS256 first, and OpenID Connect Discovery metadata', async () => {
    const { keys } = await jwks(server);
    expect(keys.map((k) => k.alg)).toEqual(['RS256', 'ES256', 'EdDSA']);
    for (const key of keys) {
      expect(key).toMatchObject({ kty: KEY_TYPE[key.alg as typeof alg], use: 'sig', kid: expect.any(String) });
      // The public half only.
      expect(key).not.toHaveProperty('d');
      expect(key).not.toHaveProperty('p');
    }

    const discovery = (await server.app.inject('/.well-known/openid-configuration')).json();
    expect(discovery).toMatchObject({
      issuer: ISSUER,
      authorization_endpoint: `${ISSUER}/authorize`,
      token_endpoint: `${ISSUER}/token`,
      userinfo_endpoint: `${ISSUER}/userinfo`,
      jwks_uri: `${ISSUER}/.well-known/jwks.json`,
      scopes_supported: ['openid', 'email', 'profile'],
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['RS256', 'ES256', 'EdDSA'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_methods_supported: ['client_secret_post', 'none', 'private_key_jwt'],
      code_challenge_methods_supported: ['S256'],
      request_uri_parameter_supported: false,
      backchannel_logout_supported: true,
      backchannel_logout_session_supported: true,
      client_id_metadata_document_supported: true,
      registration_endpoint: `${ISSUER}/register`,
    });
    expect(discovery.claims_supported).toEqual(expect.arrayContaining(['sub', 'sid', 'email', 'email_verified', 'nonce', 'auth_time', 'model']));
    // A client that discovers through the RFC 8414 document learns the same: it can validate every ID token.
    const rfc8414 = (await server.app.inject('/.well-known/oauth-authorization-server')).json();
    expect(rfc8414).toEqual(discovery);
  });

  it('answers the code grant with an ID token signed by the published RS256 key (the website chose none), carrying every claim', async () => {
    const { client, agent, before, tokens } = await signIn(server, { scope: 'openid email', nonce: 'nonce-0123456789' }, 'claude-test');
    const { payload, protectedHeader } = await jwtVerify(tokens.id_token, createLocalJWKSet(await jwks(server)), {
      issuer: ISSUER,
      audience: client.client_id,
      algorithms: ['RS256'],
    });
    expect(protectedHeader).toMatchObject({ alg: 'RS256', typ: 'JWT' });
    const digest = createHash(HASH.RS256).update(tokens.access_token).digest();
    expect(payload).toEqual({
      iss: ISSUER,
      sub: agent.agent_id,
      aud: client.client_id,
      azp: client.client_id,
      iat: expect.any(Number),
      exp: payload.iat! + 3600,
      auth_time: expect.any(Number),
      nonce: 'nonce-0123456789',
      at_hash: digest.subarray(0, digest.length / 2).toString('base64url'),
      // The grant's id: the session a logout token will name.
      sid: expect.any(String),
      email: agent.email,
      email_verified: false,
      model: 'claude-test',
    });
    expect(payload.auth_time).toBeGreaterThanOrEqual(before);
    expect(payload.auth_time).toBeLessThanOrEqual(payload.iat!);

    // A refresh answers without one (OpenID Connect Core §12.2 allows it); the access token is still HS256.
    const refreshed = await refresh(server, client, tokens.refresh_token);
    expect(refreshed.statusCode).toBe(200);
    expect(refreshed.json()).not.toHaveProperty('id_token');
    expect(decodeProtectedHeader(refreshed.json().access_token).alg).toBe('HS256');
  });

  it('leaves nonce out when none was sent, and the email out when the scope does not share it', async () => {
    const { tokens } = await signIn(server, { scope: 'openid' });
    const { payload } = await jwtVerify(tokens.id_token, createLocalJWKSet(await jwks(server)));
    expect(payload).not.toHaveProperty('nonce');
    // openid alone shares the email at /userinfo, so the ID token carries it too.
    expect(payload).toHaveProperty('email');

    const withoutOpenid = await signIn(server, { scope: 'email' });
    expect(withoutOpenid.tokens).not.toHaveProperty('id_token');
  });

  it('refuses a nonce that is too long or repeated, on the error page', async () => {
    const client = await server.createClient();
    const long = await startAuthorize(server, client, { nonce: 'n'.repeat(501) });
    expect(long.res.statusCode).toBe(400);
    expect(long.res.body).toMatch(/the nonce parameter is too long/i);
    const repeated = await server.app.inject(
      `/authorize?client_id=${client.client_id}&redirect_uri=${encodeURIComponent(client.redirect_uris[0])}&response_type=code` +
        `&state=s&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256&nonce=a&nonce=b`,
    );
    expect(repeated.statusCode).toBe(400);
    expect(repeated.body).toMatch(/the nonce parameter must not be repeated/i);
  });
});

describe(`signing key rotation (${storeName})`, () => {
  let server: TestServer;
  let second: TestServer;
  beforeAll(async () => ({ server, second } = await startTwoInstances({ ID_TOKEN_SIGNING_ALG: 'ES256' })));
  afterAll(() => closeAll(second, server));

  it('makes a new key current on every instance, keeps the old one published until its tokens expire, then drops it', async () => {
    // The sign-ins' websites chose no algorithm: their ID tokens are RS256 on this ES256 deployment.
    const rs256 = (keys: { kid?: string; alg?: string }[]) => keys.filter((k) => k.alg === 'RS256').map((k) => k.kid);
    const oldKey = (await jwks(server)).keys.find((k) => k.alg === 'RS256')!;
    const signedBefore = (await signIn(server, { scope: 'openid' })).tokens.id_token;
    expect(decodeProtectedHeader(signedBefore).kid).toBe(oldKey.kid);

    const rotated = await server.adminCall('POST', '/admin/keys/rotate');
    expect(rotated.statusCode).toBe(200);
    // The default algorithm, RS256, is the view's headline.
    expect(rotated.json.alg).toBe('RS256');
    const newKid = rotated.json.current_kid;
    expect(newKid).not.toBe(oldKey.kid);
    expect(rs256(rotated.json.keys)).toEqual([newKid, oldKey.kid]);
    expect(rotated.json.current.map((k: { alg: string }) => k.alg)).toEqual(['RS256', 'ES256', 'EdDSA']);

    // The other instance publishes both at once, so a token signed before the rotation still verifies there.
    const published = await jwks(second);
    expect(rs256(published.keys)).toEqual([newKid, oldKey.kid]);
    await jwtVerify(signedBefore, createLocalJWKSet(published));
    const signedAfter = (await signIn(server, { scope: 'openid' })).tokens.id_token;
    expect(decodeProtectedHeader(signedAfter).kid).toBe(newKid);

    // The old key was kept for the access-token lifetime (plus two minutes' margin) after its retirement.
    const { rows } = await server.services.db.query<{ kept: number }>(
      `SELECT extract(epoch FROM expires_at - retired_at)::float8 AS kept FROM signing_keys WHERE kid = $1`,
      [oldKey.kid],
    );
    expect(rows[0].kept).toBe(3600 + 120);
    // Once that time has passed it is no longer published (as an instance reading the store now
    // sees it: the JWKS is re-read at most once a second), and the purge deletes it.
    await server.services.db.query(`UPDATE signing_keys SET expires_at = now() - interval '1 second' WHERE kid = $1`, [oldKey.kid]);
    const reader = await openSigningKeys(server.services.store.serverKeys, 3600);
    expect(rs256(await reader.published())).toEqual([newKid]);
    const removed = await purgeExpired(server.services, { auditRetentionDays: 365, auditRetentionWithoutAgentDays: 365, log: server.app.log });
    expect(removed.signing_keys).toBe(1);
    expect((await server.adminCall('GET', '/admin/keys')).json).toMatchObject({ alg: 'RS256', current_kid: newKid });
  });
});

describe(`signing keys kept in the store (${storeName})`, () => {
  let server: TestServer;
  afterAll(() => server.close());

  it('an instance starting over the same store signs with the same keys', async () => {
    server = await startTestServer({ ID_TOKEN_SIGNING_ALG: 'RS256' });
    const published = (await jwks(server)).keys;
    // As a restart would: the keys are read back, not made again.
    const again = await openSigningKeys(server.services.store.serverKeys, 3600);
    for (const alg of ['RS256', 'ES256', 'EdDSA'] as const) {
      expect((await again.current(alg)).kid).toBe(published.find((k) => k.alg === alg)!.kid);
    }
    expect((await again.published()).map((k) => k.kid)).toEqual(published.map((k) => k.kid));
  });
});

describe(`ID token algorithm per website (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ ID_TOKEN_SIGNING_ALG: 'RS256' });
  });
  afterAll(() => server.close());

  /** A sign-in at `client` exchanged for tokens; the ID token verified against the JWKS in `alg` only. */
  async function idTokenOf(client: { client_id: string; client_secret: string; redirect_uris: string[] }, alg: string) {
    const agent = await server.createAgent();
    const started = await startAuthorize(server, client, { scope: 'openid' });
    await agentAuthenticate(server, { request_id: started.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret, model: 'm' });
    const { code } = await completeInBrowser(server, started.requestId, started.cookie);
    const { id_token: idToken } = (await exchangeCode(server, client, code!, started.verifier)).json();
    const { protectedHeader } = await jwtVerify(idToken, createLocalJWKSet(await jwks(server)), {
      issuer: ISSUER,
      audience: client.client_id,
      algorithms: [alg],
    });
    return protectedHeader;
  }

  it('signs the ID tokens of a website that registered ES256 or EdDSA with that algorithm, others with the default', async () => {
    for (const alg of ['ES256', 'EdDSA'] as const) {
      const created = await server.adminCall('POST', '/admin/clients', {
        name: `Website ${alg}`,
        redirect_uris: ['https://shop.example/callback'],
        id_token_signed_response_alg: alg,
      });
      expect(created.statusCode, JSON.stringify(created.json)).toBe(201);
      expect(created.json.id_token_signed_response_alg).toBe(alg);
      expect((await server.adminCall('GET', `/admin/clients/${created.json.client_id}`)).json.id_token_signed_response_alg).toBe(alg);
      expect(await idTokenOf(created.json, alg)).toMatchObject({ alg, typ: 'JWT' });
    }
    // Without a choice: RS256, which the view shows as the website's algorithm.
    const plain = await server.createClient();
    expect((await server.adminCall('GET', `/admin/clients/${plain.client_id}`)).json.id_token_signed_response_alg).toBe('RS256');
    expect(await idTokenOf(plain, 'RS256')).toMatchObject({ alg: 'RS256' });

    // PATCH changes it, null gives the default back; anything else is refused.
    const patched = await server.adminCall('PATCH', `/admin/clients/${plain.client_id}`, { id_token_signed_response_alg: 'EdDSA' });
    expect(patched.json.id_token_signed_response_alg).toBe('EdDSA');
    expect(await idTokenOf(plain, 'EdDSA')).toMatchObject({ alg: 'EdDSA' });
    const cleared = await server.adminCall('PATCH', `/admin/clients/${plain.client_id}`, { id_token_signed_response_alg: null });
    expect(cleared.json.id_token_signed_response_alg).toBe('RS256');
    expect(
      (await server.adminCall('GET', '/admin/clients')).json.clients.find((c: { client_id: string }) => c.client_id === plain.client_id),
    ).toMatchObject({
      id_token_signed_response_alg: 'RS256',
    });
    expect(await idTokenOf(plain, 'RS256')).toMatchObject({ alg: 'RS256' });
    for (const alg of ['HS256', 'none', 'rs256']) {
      const refused = await server.adminCall('PATCH', `/admin/clients/${plain.client_id}`, { id_token_signed_response_alg: alg });
      expect(refused.statusCode).toBe(400);
      expect(refused.json.error).toBe('invalid_request');
    }
  });
});
