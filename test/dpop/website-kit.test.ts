import { generateKeyPairSync } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyDpop } from '@agent-auth/website/dpop';
import { type AuthInfo, protectedResource } from '@agent-auth/website/mcp';
import { decodeJwt, exportJWK, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeForClient, postForm } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { type DpopKey, dpopKey, dpopProof } from '../helpers/dpop.js';
import { signInToCode } from '../helpers/flow.js';
import { ISSUER, startTestServer, type TestServer } from '../helpers/server.js';

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

describe(`the website kit's MCP resource guard, on DPoP-bound resource tokens (${storeName})`, () => {
  const MCP = 'https://mcp.dpop.example/mcp';
  let server: TestServer;
  let key: DpopKey;
  let token: string;
  let jwksServer: Server;
  let mcpServer: Server;
  let mcpUrl: string;

  async function listen(s: Server) {
    await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  }

  beforeAll(async () => {
    server = await startTestServer();
    key = await dpopKey();
    expect((await server.adminCall('POST', '/admin/resources', { resource: MCP, name: 'DPoP MCP' })).statusCode).toBe(201);
    const { client, code, verifier } = await signInToCode(server, { authorize: { resource: MCP } });
    const form = { grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: client.redirect_uris[0], resource: MCP, ...client };
    const res = await postForm(server, '/token', form, { dpop: await dpopProof(key) });
    expect(res.json().token_type).toBe('DPoP');
    token = res.json().access_token;
    // The resource token carries the binding (RFC 9449 §6.1).
    expect(decodeJwt(token).cnf).toEqual({ jkt: key.jkt });
    jwksServer = createServer((_req, res) => {
      void server.app
        .inject({ url: '/.well-known/jwks.json' })
        .then((jwks) => res.writeHead(200, { 'content-type': 'application/json' }).end(jwks.body));
    });
    const guard = protectedResource({ issuer: ISSUER, resource: MCP, jwksUri: `${await listen(jwksServer)}/jwks` });
    const auth = guard.middleware();
    mcpServer = createServer((req: IncomingMessage & { auth?: AuthInfo }, res) =>
      auth(req, res, () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ agent: req.auth?.extra.agentId }))),
    );
    mcpUrl = await listen(mcpServer);
  });
  afterAll(async () => {
    await new Promise((resolve) => mcpServer?.close(resolve));
    await new Promise((resolve) => jwksServer?.close(resolve));
    await server.close();
  });

  // The MCP server's public URL is the resource's: behind a proxy, the proof names it, not this listener.
  const call = (authorization: string, proof?: string) =>
    fetch(`${mcpUrl}/mcp`, { method: 'POST', headers: { authorization, ...(proof === undefined ? {} : { dpop: proof }) } });
  const proofFor = (k: DpopKey, options: Parameters<typeof dpopProof>[1] = {}) => dpopProof(k, { htu: MCP, accessToken: token, ...options });

  it('accepts the token under the DPoP scheme with a proof of its key for this request, once', async () => {
    const proof = await proofFor(key);
    const res = await call(`DPoP ${token}`, proof);
    expect(res.status).toBe(200);
    expect((await res.json()).agent).toMatch(/^agent_/);
    const replayed = await call(`DPoP ${token}`, proof);
    expect(replayed.status).toBe(401);
    expect(await replayed.json()).toMatchObject({ error: 'invalid_dpop_proof', error_description: expect.stringMatching(/used already/) });
  });

  it.each([
    ['the Bearer scheme (a copied token)', async () => call(`Bearer ${token}`), 'invalid_token', /^Bearer error="invalid_token"/],
    ['no proof', async () => call(`DPoP ${token}`), 'invalid_dpop_proof', /^DPoP error="invalid_dpop_proof"/],
    ['a proof of another key', async () => call(`DPoP ${token}`, await proofFor(await dpopKey())), 'invalid_dpop_proof', /^DPoP /],
    ['a proof for another method', async () => call(`DPoP ${token}`, await proofFor(key, { htm: 'GET' })), 'invalid_dpop_proof', /^DPoP /],
    ['a proof for another URL', async () => call(`DPoP ${token}`, await proofFor(key, { htu: `${mcpUrl}/mcp` })), 'invalid_dpop_proof', /^DPoP /],
    [
      'a proof for another token (ath)',
      async () => call(`DPoP ${token}`, await proofFor(key, { accessToken: 'other' })),
      'invalid_dpop_proof',
      /^DPoP /,
    ],
  ])('refuses %s with 401', async (_, make, error, challenge) => {
    const res = await make();
    expect(res.status).toBe(401);
    expect((await res.json()).error).toBe(error);
    expect(res.headers.get('www-authenticate')).toMatch(challenge);
    expect(res.headers.get('www-authenticate')).toContain('resource_metadata="https://mcp.dpop.example/.well-known/oauth-protected-resource/mcp"');
  });
});
