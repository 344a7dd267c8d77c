import { createHmac, generateKeyPairSync } from 'node:crypto';
import { decodeJwt, exportJWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeForClient, type Credentials, exchangeCode, introspect, postForm, refresh } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { type DpopKey, dpopKey, dpopProof } from '../helpers/dpop.js';
import { signInToCode, startAuthorize } from '../helpers/flow.js';
import { closeAll, ISSUER, startTestServer, startTwoInstances, type TestServer } from '../helpers/server.js';

type Client = Credentials & { redirect_uris: string[] };
type Res = { statusCode: number; headers: Record<string, unknown>; json(): any };

const ALGS = 'ES256 EdDSA Ed25519 RS256 PS256';
const USERINFO = `${ISSUER}/userinfo`;

/** A token request's 400 (RFC 9449 §5). */
function expectTokenRefusal(res: Res, error: string, description?: RegExp) {
  expect(res.statusCode).toBe(400);
  expect(res.json().error).toBe(error);
  if (description) expect(res.json().error_description).toMatch(description);
}

/** A resource's 401 with the DPoP challenge (RFC 9449 §7.1). */
function expectChallenge(res: Res, error: string, bodyError = error) {
  expect(res.statusCode).toBe(401);
  expect(res.json().error).toBe(bodyError);
  expect(res.headers['www-authenticate']).toMatch(new RegExp(`^DPoP error="${error}", error_description="[^"]+", algs="${ALGS}"$`));
}

/** The form of a code exchange (RFC 6749 §4.1.3). */
const exchangeForm = (client: Client, code: string, verifier: string) => ({
  grant_type: 'authorization_code',
  code,
  code_verifier: verifier,
  redirect_uri: client.redirect_uris[0],
  client_id: client.client_id,
  client_secret: client.client_secret,
});

/** POST /token with a DPoP header (or several, or none). */
function withProof(server: TestServer, form: Record<string, string>, proof: string | string[] | undefined) {
  return postForm(server, '/token', form, proof === undefined ? {} : ({ dpop: proof } as Record<string, string>));
}

describe(`DPoP (RFC 9449) (${storeName})`, () => {
  let server: TestServer;
  let key: DpopKey;
  beforeAll(async () => {
    server = await startTestServer();
    key = await dpopKey();
  });
  afterAll(() => server.close());

  /** A code for a new client, and the exchange's form. */
  async function codeExchange(client?: Client) {
    const c = client ?? ((await server.createClient()) as Client);
    const { code, verifier, agent } = await codeForClient(server, c, { scope: 'openid email' });
    return { client: c, agent, form: exchangeForm(c, code, verifier) };
  }

  /** DPoP-bound tokens for a new client, bound to `k`. */
  async function boundTokens(k = key) {
    const { client, agent, form } = await codeExchange();
    const res = await withProof(server, form, await dpopProof(k));
    expect(res.statusCode, JSON.stringify(res.json())).toBe(200);
    return { client, agent, ...(res.json() as { access_token: string; refresh_token: string; token_type: string }) };
  }

  const userinfo = async (token: string, proof?: string, scheme = 'DPoP') =>
    server.app.inject({ url: '/userinfo', headers: { authorization: `${scheme} ${token}`, ...(proof === undefined ? {} : { dpop: proof }) } });
  const userinfoProof = (accessToken: string, k = key, options: Parameters<typeof dpopProof>[1] = {}) =>
    dpopProof(k, { htm: 'GET', htu: USERINFO, accessToken, ...options });

  it('advertises the proof algorithms in both metadata documents', async () => {
    for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
      const res = await server.app.inject({ url: path });
      expect(res.json().dpop_signing_alg_values_supported).toEqual(['ES256', 'EdDSA', 'Ed25519', 'RS256', 'PS256']);
    }
  });

  it.each(['ES256', 'EdDSA', 'Ed25519', 'RS256', 'PS256'])(
    '%s: the code exchange binds the tokens to the key; /userinfo wants DPoP and the proof',
    async (alg) => {
      const k = await dpopKey(alg);
      const { client, agent, access_token, token_type, refresh_token } = await boundTokens(k);
      expect(token_type).toBe('DPoP');
      expect(decodeJwt(access_token).cnf).toEqual({ jkt: k.jkt });
      const res = await userinfo(access_token, await userinfoProof(access_token, k));
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ sub: agent.agent_id, email: agent.email });
      // Introspection reports the binding (RFC 9449 §6.2), of the access and of the refresh token.
      expect((await introspect(server, client, access_token)).json()).toMatchObject({ active: true, token_type: 'DPoP', cnf: { jkt: k.jkt } });
      expect((await introspect(server, client, refresh_token)).json()).toMatchObject({
        active: true,
        token_type: 'refresh_token',
        cnf: { jkt: k.jkt },
      });
    },
  );

  it('issues bearer tokens as before without a proof, and no cnf', async () => {
    const { client, form } = await codeExchange();
    const res = await withProof(server, form, undefined);
    expect(res.json().token_type).toBe('Bearer');
    expect(decodeJwt(res.json().access_token).cnf).toBeUndefined();
    expect((await introspect(server, client, res.json().access_token)).json()).toMatchObject({ token_type: 'access_token' });
    expect((await introspect(server, client, res.json().access_token)).json().cnf).toBeUndefined();
    // An unbound token under the DPoP scheme is refused: nothing binds it to the proof's key.
    const token = res.json().access_token;
    expectChallenge(await userinfo(token, await userinfoProof(token)), 'invalid_token', 'invalid_request');
    expect((await userinfo(token, undefined, 'Bearer')).statusCode).toBe(200);
  });

  describe('refuses a proof at /token with 400 invalid_dpop_proof', () => {
    const now = () => Math.floor(Date.now() / 1000);
    const hs256Proof = () => {
      const input = `${Buffer.from(JSON.stringify({ typ: 'dpop+jwt', alg: 'HS256', jwk: { kty: 'oct', k: 'c2VjcmV0' } })).toString('base64url')}.${Buffer.from(
        JSON.stringify({ jti: 'hs', htm: 'POST', htu: `${ISSUER}/token`, iat: now() }),
      ).toString('base64url')}`;
      return `${input}.${createHmac('sha256', 'secret').update(input).digest('base64url')}`;
    };
    const cases: [string, () => Promise<string> | string, RegExp][] = [
      ['wrong htm', () => dpopProof(key, { htm: 'GET' }), /htm must be POST/],
      ['wrong htu', () => dpopProof(key, { htu: `${ISSUER}/userinfo` }), /htu must be/],
      ['htu of another host', () => dpopProof(key, { htu: 'http://evil.example:3000/token' }), /htu must be/],
      ['old iat', () => dpopProof(key, { claims: { iat: now() - 61 } }), /older than 60 seconds/],
      ['future iat', () => dpopProof(key, { claims: { iat: now() + 30 } }), /in the future/],
      ['no jti', () => dpopProof(key, { claims: { jti: undefined } }), /jti/],
      ['an HS256 proof', hs256Proof, /alg must be one of ES256, EdDSA, Ed25519, RS256, PS256/],
      ['alg none', () => dpopProof(key, { header: { alg: 'none' } }), /alg must be one of/],
      ['wrong typ', () => dpopProof(key, { header: { typ: 'JWT' } }), /typ must be "dpop\+jwt"/],
      ['no jwk', () => dpopProof(key, { header: { jwk: undefined } }), /public key as jwk/],
      ['a key of another type than alg', () => dpopProof(key, { header: { alg: 'EdDSA' } }), /does not fit EdDSA/],
      ['a signature by another key', async () => dpopProof({ ...(await dpopKey()), jwk: key.jwk }), /signature does not verify/],
      ['not a JWT', () => 'not-a-jwt', /not a JWT/],
    ];
    it.each(cases)('%s', async (_, make, description) => {
      const { form } = await codeExchange();
      expectTokenRefusal(await withProof(server, form, await make()), 'invalid_dpop_proof', description);
      // Nothing was spent: the same code goes through with a good proof.
      expect((await withProof(server, form, await dpopProof(key))).statusCode).toBe(200);
    });

    it('a private key in the header', async () => {
      const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
      const jwk = await exportJWK(privateKey);
      const { form } = await codeExchange();
      expectTokenRefusal(await withProof(server, form, await dpopProof({ ...key, jwk })), 'invalid_dpop_proof', /never a private one/);
    });

    it('a replayed proof, and two DPoP headers', async () => {
      const proof = await dpopProof(key);
      const first = await codeExchange();
      expect((await withProof(server, first.form, proof)).statusCode).toBe(200);
      const second = await codeExchange();
      expectTokenRefusal(await withProof(server, second.form, proof), 'invalid_dpop_proof', /used already/);
      expectTokenRefusal(await withProof(server, second.form, [await dpopProof(key), await dpopProof(key)]), 'invalid_dpop_proof', /exactly one/);
    });
  });

  it('compares htu without query and fragment, normalised (RFC 3986 §6.2.2)', async () => {
    for (const htu of ['http://LOCALHOST:3000/token?x=1#f', 'HTTP://localhost:3000/%74oken', 'http://localhost:3000/a/../token']) {
      const { form } = await codeExchange();
      expect((await withProof(server, form, await dpopProof(key, { htu }))).statusCode, htu).toBe(200);
    }
  });

  describe('/userinfo', () => {
    it('refuses a wrong ath, another key, a replay, a missing proof, a proof for another endpoint (401, DPoP challenge)', async () => {
      const { access_token } = await boundTokens();
      const other = await dpopKey();
      expectChallenge(await userinfo(access_token, await userinfoProof('another token')), 'invalid_dpop_proof');
      expectChallenge(await userinfo(access_token, await userinfoProof(access_token, key, { accessToken: undefined })), 'invalid_dpop_proof');
      expectChallenge(await userinfo(access_token, await userinfoProof(access_token, other)), 'invalid_dpop_proof');
      expectChallenge(await userinfo(access_token), 'invalid_dpop_proof');
      expectChallenge(await userinfo(access_token, await userinfoProof(access_token, key, { htm: 'POST' })), 'invalid_dpop_proof');
      expectChallenge(await userinfo(access_token, await userinfoProof(access_token, key, { htu: `${ISSUER}/token` })), 'invalid_dpop_proof');
      const proof = await userinfoProof(access_token);
      expect((await userinfo(access_token, proof)).statusCode).toBe(200);
      const replayed = await userinfo(access_token, proof);
      expectChallenge(replayed, 'invalid_dpop_proof');
      expect(replayed.json().error_description).toMatch(/used already/);
    });

    it('refuses a DPoP-bound token presented as a bearer token: a copied token is worth nothing', async () => {
      const { access_token } = await boundTokens();
      expectChallenge(await userinfo(access_token, undefined, 'Bearer'), 'invalid_token', 'invalid_request');
      // Nor in a form body (RFC 6750 §2.2).
      const body = await server.app.inject({
        method: 'POST',
        url: '/userinfo',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `access_token=${access_token}`,
      });
      expectChallenge(body, 'invalid_token', 'invalid_request');
      // A forged token under the DPoP scheme hears the DPoP challenge.
      expectChallenge(await userinfo('forged.token.value', await userinfoProof('forged.token.value')), 'invalid_token', 'invalid_request');
    });

    it('POST /userinfo takes the proof with htm POST', async () => {
      const { access_token } = await boundTokens();
      const res = await server.app.inject({
        method: 'POST',
        url: '/userinfo',
        headers: { authorization: `DPoP ${access_token}`, dpop: await userinfoProof(access_token, key, { htm: 'POST' }) },
      });
      expect(res.statusCode).toBe(200);
    });
  });

  describe('refresh', () => {
    it('of a DPoP grant: only with a proof of the same key; refused ones spend nothing', async () => {
      const { client, refresh_token } = await boundTokens();
      const other = await dpopKey();
      const form = { grant_type: 'refresh_token', refresh_token, client_id: client.client_id, client_secret: client.client_secret };
      expectTokenRefusal(await withProof(server, form, await dpopProof(other)), 'invalid_grant', /bound to a DPoP key/);
      expectTokenRefusal(await refresh(server, client, refresh_token), 'invalid_grant', /bound to a DPoP key/);
      const res = await withProof(server, form, await dpopProof(key));
      expect(res.statusCode).toBe(200);
      expect(res.json().token_type).toBe('DPoP');
      expect(decodeJwt(res.json().access_token).cnf).toEqual({ jkt: key.jkt });
    });

    it('of a bearer grant with a proof: the new access token is bound, the grant is not', async () => {
      const { client, form } = await codeExchange();
      const tokens = (await withProof(server, form, undefined)).json();
      const refreshed = await withProof(
        server,
        { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: client.client_id, client_secret: client.client_secret },
        await dpopProof(key),
      );
      expect(refreshed.json()).toMatchObject({ token_type: 'DPoP' });
      expect((await refresh(server, client, refreshed.json().refresh_token)).json().token_type).toBe('Bearer');
    });
  });

  describe('a website registered with dpop_bound_access_tokens', () => {
    it('is shown and changed through the admin API', async () => {
      const created = await server.adminCall('POST', '/admin/clients', {
        name: 'Bound',
        redirect_uris: ['https://bound.example/cb'],
        dpop_bound_access_tokens: true,
      });
      expect(created.json.dpop_bound_access_tokens).toBe(true);
      expect((await server.adminCall('GET', `/admin/clients/${created.json.client_id}`)).json.dpop_bound_access_tokens).toBe(true);
      const patched = await server.adminCall('PATCH', `/admin/clients/${created.json.client_id}`, { dpop_bound_access_tokens: false });
      expect(patched.json.dpop_bound_access_tokens).toBe(false);
      expect((await server.createClient()) as unknown).toMatchObject({ dpop_bound_access_tokens: false });
      expect((await server.adminCall('PATCH', `/admin/clients/${created.json.client_id}`, { dpop_bound_access_tokens: 'yes' })).statusCode).toBe(400);
    });

    it('gets no token without a proof (400 invalid_request), at the code exchange and at refresh', async () => {
      const created = (await server.adminCall('POST', '/admin/clients', { name: 'Bound', redirect_uris: ['https://bound.example/cb'] })).json;
      const { form } = await codeExchange(created);
      // Tokens issued while DPoP was optional, then the website is switched to DPoP only.
      const bearer = (await withProof(server, form, undefined)).json();
      await server.adminCall('PATCH', `/admin/clients/${created.client_id}`, { dpop_bound_access_tokens: true });
      expectTokenRefusal(await refresh(server, created, bearer.refresh_token), 'invalid_request', /must use DPoP/);
      const second = await codeExchange(created);
      expectTokenRefusal(await withProof(server, second.form, undefined), 'invalid_request', /must use DPoP/);
      // Refused before the code was looked at: it still works with a proof.
      expect((await withProof(server, second.form, await dpopProof(key))).json().token_type).toBe('DPoP');
      const refreshed = await withProof(
        server,
        { grant_type: 'refresh_token', refresh_token: bearer.refresh_token, client_id: created.client_id, client_secret: created.client_secret },
        await dpopProof(key),
      );
      expect(refreshed.json().token_type).toBe('DPoP');
    });
  });

  describe('a website registered with dpop_nonce_required (RFC 9449 §8)', () => {
    it('must sign its proofs with a server nonce at /token, at refresh and at /userinfo; refused proofs spend nothing', async () => {
      const created = (
        await server.adminCall('POST', '/admin/clients', { name: 'Nonces', redirect_uris: ['https://nonces.example/cb'], dpop_nonce_required: true })
      ).json;
      expect(created.dpop_nonce_required).toBe(true);
      const { form } = await codeExchange(created);
      const refused = await withProof(server, form, await dpopProof(key));
      expectTokenRefusal(refused, 'use_dpop_nonce', /nonce/);
      const nonce = refused.headers['dpop-nonce'] as string;
      expect(nonce).toMatch(/^[\w-]{32}$/);
      const issued = await withProof(server, form, await dpopProof(key, { nonce }));
      expect(issued.statusCode, issued.body).toBe(200);
      expect(issued.headers['dpop-nonce']).toBe(nonce);
      const { access_token, refresh_token } = issued.json();

      const noNonce = await userinfo(access_token, await userinfoProof(access_token));
      expectChallenge(noNonce, 'use_dpop_nonce');
      expect(noNonce.headers['dpop-nonce']).toBe(nonce);
      expect((await userinfo(access_token, await userinfoProof(access_token, key, { nonce }))).statusCode).toBe(200);

      const refreshForm = { grant_type: 'refresh_token', refresh_token, client_id: created.client_id, client_secret: created.client_secret };
      expectTokenRefusal(await withProof(server, refreshForm, await dpopProof(key)), 'use_dpop_nonce');
      expect((await withProof(server, refreshForm, await dpopProof(key, { nonce }))).statusCode).toBe(200);

      // Turned off, its proofs need no nonce any more, at /userinfo too (the grant cache forgets the setting).
      await server.adminCall('PATCH', `/admin/clients/${created.client_id}`, { dpop_nonce_required: false });
      await expect.poll(async () => (await userinfo(access_token, await userinfoProof(access_token))).statusCode).toBe(200);
    });
  });

  describe('dpop_jkt at /authorize (RFC 9449 §10)', () => {
    async function boundCode(jkt: string) {
      const { client, code, verifier } = await signInToCode(server, { authorize: { dpop_jkt: jkt } });
      return { client, form: exchangeForm(client, code, verifier) };
    }

    it('binds the code: the exchange must prove that key', async () => {
      const good = await boundCode(key.jkt);
      expect((await withProof(server, good.form, await dpopProof(key))).json().token_type).toBe('DPoP');
      const other = await boundCode(key.jkt);
      expectTokenRefusal(await withProof(server, other.form, await dpopProof(await dpopKey())), 'invalid_grant', /dpop_jkt/);
      const none = await boundCode(key.jkt);
      expectTokenRefusal(await withProof(server, none.form, undefined), 'invalid_grant', /dpop_jkt/);
    });

    it('refuses a dpop_jkt that is no thumbprint', async () => {
      const client = await server.createClient();
      const { res } = await startAuthorize(server, client, { dpop_jkt: 'short' });
      expect(res.statusCode).toBe(400);
      expect(res.body).toContain('dpop_jkt');
    });
  });
});

describe(`DPoP with DPOP_NONCE=on, over two instances (${storeName})`, () => {
  let server: TestServer;
  let second: TestServer;
  let key: DpopKey;
  beforeAll(async () => {
    ({ server, second } = await startTwoInstances({ DPOP_NONCE: 'on' }));
    key = await dpopKey();
  });
  afterAll(() => closeAll(second, server));

  it('demands a nonce at /token and /userinfo, hands it out on every answer, and the instances share nonces and spent proofs', async () => {
    const client = (await server.createClient()) as Client;
    const { code, verifier } = await codeForClient(server, client);
    const exchange = (instance: TestServer, proof: string) => postForm(instance, '/token', exchangeForm(client, code, verifier), { dpop: proof });

    const refused = await exchange(server, await dpopProof(key));
    expectTokenRefusal(refused, 'use_dpop_nonce');
    const nonce = refused.headers['dpop-nonce'] as string;
    expect(nonce).toMatch(/^[\w-]{32}$/);
    expectTokenRefusal(await exchange(server, await dpopProof(key, { nonce: 'made-up' })), 'use_dpop_nonce');

    // The first instance's nonce is good on the second.
    const proof = await dpopProof(key, { nonce });
    const issued = await exchange(second, proof);
    expect(issued.statusCode).toBe(200);
    expect(issued.headers['dpop-nonce']).toBe(nonce);
    // The proof the second accepted is a replay on the first.
    const { code: code2, verifier: verifier2 } = await codeForClient(server, client);
    const replay = await postForm(server, '/token', exchangeForm(client, code2, verifier2), { dpop: proof });
    expectTokenRefusal(replay, 'invalid_dpop_proof', /used already/);

    const token = issued.json().access_token;
    const userinfo = (instance: TestServer, p: string) =>
      instance.app.inject({ url: '/userinfo', headers: { authorization: `DPoP ${token}`, dpop: p } });
    const noNonce = await userinfo(server, await dpopProof(key, { htm: 'GET', htu: USERINFO, accessToken: token }));
    expectChallenge(noNonce, 'use_dpop_nonce');
    expect(noNonce.headers['dpop-nonce']).toBe(nonce);
    const accepted = await dpopProof(key, { htm: 'GET', htu: USERINFO, accessToken: token, nonce });
    const ok = await userinfo(second, accepted);
    expect(ok.statusCode).toBe(200);
    expect(ok.headers['dpop-nonce']).toBe(nonce);
    // A proof one instance accepted at /userinfo is a replay on the other.
    const replayed = await userinfo(server, accepted);
    expectChallenge(replayed, 'invalid_dpop_proof');
    expect(replayed.json().error_description).toMatch(/used already/);
  });

  it('keeps bearer tokens working without any nonce', async () => {
    const client = (await server.createClient()) as Client;
    const { code, verifier } = await codeForClient(server, client);
    const res = await exchangeCode(server, client, code, verifier);
    expect(res.json().token_type).toBe('Bearer');
    expect(res.headers['dpop-nonce']).toBeUndefined();
    expect((await second.app.inject({ url: '/userinfo', headers: { authorization: `Bearer ${res.json().access_token}` } })).statusCode).toBe(200);
  });
});

describe(`DPoP nonces across restarts (${storeName})`, () => {
  it('are derived from a secret kept in the store, so a new process accepts an old one', async () => {
    const server = await startTestServer({ DPOP_NONCE: 'on' });
    try {
      const first = server.services.dpop.nonce();
      const { DpopNonces } = await import('../../src/dpop/nonces.js');
      const secret = await server.services.store.serverKeys.dpopNonceSecret('never used: one is kept already');
      expect(new DpopNonces(secret).accepts(first!, Date.now() / 1000)).toBe(true);
      expect(new DpopNonces('another secret').accepts(first!, Date.now() / 1000)).toBe(false);
    } finally {
      await server.close();
    }
  });
});
