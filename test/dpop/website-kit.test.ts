import { generateKeyPairSync } from 'node:crypto';
import { verifyDpop } from '@agent-auth/website/dpop';
import { exportJWK, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeForClient, postForm } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { type DpopKey, dpopKey, dpopProof } from '../helpers/dpop.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

const API = 'https://api.shop.example/orders';

describe(`the website kit's verifyDpop, on tokens the server bound (${storeName})`, () => {
  let server: TestServer;
  let key: DpopKey;
  let token: string;
  let claims: Record<string, unknown>;
  beforeAll(async () => {
    server = await startTestServer();
    key = await dpopKey();
    const client = await server.createClient();
    const { code, verifier } = await codeForClient(server, client);
    const form = { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: client.redirect_uris[0], ...client };
    const res = await postForm(server, '/token', form, { dpop: await dpopProof(key) });
    token = res.json().access_token;
    // The resource server checks the token first (here with the shared HS256 secret).
    ({ payload: claims } = await jwtVerify(token, new TextEncoder().encode('test-jwt-secret-that-is-at-least-32-bytes-long')));
  });
  afterAll(() => server.close());

  const request = async (options: { proof?: string; authorization?: string; url?: string; method?: string } = {}) =>
    verifyDpop({
      method: options.method ?? 'GET',
      url: options.url ?? `${API}?page=2`,
      authorization: options.authorization ?? `DPoP ${token}`,
      proof: options.proof ?? (await dpopProof(key, { htm: 'GET', htu: API, accessToken: token })),
      claims,
    });

  it('accepts a proof of the bound key for this request and token, once', async () => {
    const proof = await dpopProof(key, { htm: 'GET', htu: API, accessToken: token });
    expect(await request({ proof })).toEqual({ jkt: key.jkt });
    await expect(request({ proof })).rejects.toMatchObject({ status: 401, error: 'invalid_dpop_proof', message: /used already/ });
  });

  it.each([
    ['the Bearer scheme', async () => request({ authorization: `Bearer ${token}` }), 'invalid_token'],
    ['another method', async () => request({ method: 'POST' }), 'invalid_dpop_proof'],
    ['another URL', async () => request({ url: 'https://api.shop.example/admin' }), 'invalid_dpop_proof'],
    ['another token', async () => request({ proof: await dpopProof(key, { htm: 'GET', htu: API, accessToken: 'other' }) }), 'invalid_dpop_proof'],
    [
      'another key',
      async () => request({ proof: await dpopProof(await dpopKey(), { htm: 'GET', htu: API, accessToken: token }) }),
      'invalid_dpop_proof',
    ],
    [
      'an old proof',
      async () =>
        request({ proof: await dpopProof(key, { htm: 'GET', htu: API, accessToken: token, claims: { iat: Math.floor(Date.now() / 1000) - 120 } }) }),
      'invalid_dpop_proof',
    ],
    [
      'a private key in the header',
      async () => {
        const jwk = await exportJWK(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey);
        return request({ proof: await dpopProof({ ...key, jwk }, { htm: 'GET', htu: API, accessToken: token }) });
      },
      'invalid_dpop_proof',
    ],
  ])('refuses %s', async (_, call, error) => {
    const refused = await call().catch((e) => e);
    expect(refused).toMatchObject({ status: 401, error });
    expect(refused.challenge).toMatch(new RegExp(`^DPoP error="${error}"`));
  });
});
