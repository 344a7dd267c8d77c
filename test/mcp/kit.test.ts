import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type AuthInfo, protectedResource } from '@agent-auth/website/mcp';
import { exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The website kit's resource side on its own: tokens signed here with a local key pair, its keys
 * served by a local JWKS endpoint, a node:http server behind the kit's middleware.
 */

const ISSUER = 'https://auth.example';
const RESOURCE = 'https://mcp.example.com/mcp';

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('the website kit protects a resource with agent-auth tokens', () => {
  let signingKey: CryptoKey;
  let otherKey: CryptoKey;
  const jwks: { keys: JWK[] } = { keys: [] };
  let jwksUp = true;
  let jwksFetches = 0;
  let jwksServer: Server;
  let mcpServer: Server;
  let mcpUrl: string;
  let seen: AuthInfo | undefined;

  const sign = (claims: JWTPayload = {}, header: { typ?: string; alg?: string; kid?: string } = {}, key = signingKey) => {
    const now = Math.floor(Date.now() / 1000);
    const defaults = { iss: ISSUER, sub: 'agent_abc', aud: RESOURCE, jti: crypto.randomUUID(), iat: now, exp: now + 300 };
    const payload = { ...defaults, client_id: 'https://client.example/meta.json', scope: 'tools email', email: 'owner@example.com', ...claims };
    return new SignJWT(payload).setProtectedHeader({ alg: 'RS256', typ: 'at+jwt', kid: 'k1', ...header }).sign(key);
  };

  const call = (authorization?: string, path = '/mcp') =>
    fetch(`${mcpUrl}${path}`, { method: 'POST', headers: authorization ? { authorization } : {} });

  beforeAll(async () => {
    const pair = await generateKeyPair('RS256');
    signingKey = pair.privateKey;
    otherKey = (await generateKeyPair('RS256')).privateKey;
    jwks.keys.push({ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' });
    jwksServer = createServer((_req, res) => {
      jwksFetches++;
      if (!jwksUp) return res.writeHead(502).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(jwks));
    });
    const jwksUrl = await listen(jwksServer);
    const guard = protectedResource({
      issuer: ISSUER,
      resource: RESOURCE,
      scopes: ['tools', 'email'],
      requiredScopes: ['tools'],
      jwksUri: `${jwksUrl}/jwks`,
    });
    const auth = guard.middleware();
    mcpServer = createServer((req: IncomingMessage & { auth?: AuthInfo }, res) =>
      auth(req, res, () => {
        seen = req.auth;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ agent: req.auth?.extra.agentId }));
      }),
    );
    mcpUrl = await listen(mcpServer);
  });
  afterAll(async () => {
    await new Promise((resolve) => mcpServer?.close(resolve));
    await new Promise((resolve) => jwksServer?.close(resolve));
  });

  it('publishes RFC 9728 metadata under the resource path, readable from any origin', async () => {
    const res = await fetch(`${mcpUrl}/.well-known/oauth-protected-resource/mcp`);
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(await res.json()).toEqual({
      resource: RESOURCE,
      authorization_servers: [ISSUER],
      scopes_supported: ['tools', 'email'],
      bearer_methods_supported: ['header'],
    });
    expect((await fetch(`${mcpUrl}/.well-known/oauth-protected-resource/mcp`, { method: 'POST' })).status).toBe(405);
  });

  it('answers a request without a token 401 with a challenge that names the metadata, and no error code', async () => {
    const res = await call();
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe('Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"');
    expect(await res.json()).toEqual({ error: 'invalid_token', error_description: 'an access token is required' });
  });

  it("lets a valid token through and hands the MCP SDK's AuthInfo on as req.auth", async () => {
    const token = await sign();
    const res = await call(`Bearer ${token}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ agent: 'agent_abc' });
    expect(seen).toEqual({
      token,
      clientId: 'https://client.example/meta.json',
      scopes: ['tools', 'email'],
      expiresAt: expect.any(Number),
      resource: new URL(RESOURCE),
      extra: { agentId: 'agent_abc', email: 'owner@example.com' },
    });
  });

  it('takes the audience with or without a trailing slash: both name the resource', async () => {
    expect((await call(`Bearer ${await sign({ aud: `${RESOURCE}/` })}`)).status).toBe(200);
  });

  const refusals: [string, () => Promise<string>, RegExp][] = [
    ['a token for another resource (aud)', () => sign({ aud: 'https://other.example.com/mcp' }), /aud/],
    ['an expired token', () => sign({ exp: Math.floor(Date.now() / 1000) - 60, iat: Math.floor(Date.now() / 1000) - 400 }), /expired/],
    ['a token of another issuer', () => sign({ iss: 'https://evil.example' }), /iss/],
    ['a token whose signature was tampered with', async () => (await sign()).replace(/.{6}$/, 'AAAAAA'), /not valid/],
    ['a token signed by a key not in the JWKS', () => sign({}, {}, otherKey), /not valid/],
    ['a token of another type (an ID token)', () => sign({}, { typ: 'JWT' }), /typ/],
    [
      'an HS256 token (the shared-secret kind)',
      () => new SignJWT({}).setProtectedHeader({ alg: 'HS256', typ: 'at+jwt' }).sign(new Uint8Array(32)),
      /not valid/,
    ],
    ['a DPoP-bound token presented as a bearer token', () => sign({ cnf: { jkt: 'abc' } }), /DPoP/],
    ['a token without client_id', () => sign({ client_id: undefined }), /client_id/],
  ];
  it.each(refusals)('refuses %s with 401 invalid_token', async (_name, token, description) => {
    const res = await call(`Bearer ${await token()}`);
    expect(res.status).toBe(401);
    const challenge = res.headers.get('www-authenticate')!;
    expect(challenge).toMatch(
      /^Bearer error="invalid_token", error_description="[^"]+", resource_metadata="https:\/\/mcp\.example\.com\/\.well-known\/oauth-protected-resource\/mcp"$/,
    );
    const body = await res.json();
    expect(body).toEqual({ error: 'invalid_token', error_description: expect.stringMatching(description) });
  });

  it('refuses a malformed Authorization header with 401 invalid_token', async () => {
    for (const header of ['Basic abc', 'Bearer', 'Bearer a b', `Bearer ${'x'.repeat(10)}"`]) {
      const res = await call(header);
      expect(res.status, header).toBe(401);
      expect((await res.json()).error).toBe('invalid_token');
    }
  });

  it('refuses a token without a required scope with 403 insufficient_scope, naming the scope', async () => {
    const res = await call(`Bearer ${await sign({ scope: 'email' })}`);
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toMatch(
      /^Bearer error="insufficient_scope", error_description="[^"]*", scope="tools", resource_metadata="[^"]+"$/,
    );
  });

  it('fetches the JWKS once for many tokens, and answers 503 while it cannot be fetched', async () => {
    const jwksUri = `http://127.0.0.1:${(jwksServer.address() as AddressInfo).port}/jwks`;
    const guard = protectedResource({ issuer: ISSUER, resource: RESOURCE, jwksUri });
    const before = jwksFetches;
    for (let i = 0; i < 5; i++) await guard.verifyToken(await sign());
    expect(jwksFetches - before).toBe(1);

    jwksUp = false;
    try {
      const cold = protectedResource({ issuer: ISSUER, resource: RESOURCE, jwksUri });
      const refusal = await cold.authenticate(`Bearer ${await sign()}`).catch((err: unknown) => err);
      expect(refusal).toMatchObject({ status: 503, error: 'temporarily_unavailable' });
    } finally {
      jwksUp = true;
    }
  });

  it('serves the metadata at the bare well-known path for a resource at the root of its host', () => {
    const guard = protectedResource({ issuer: `${ISSUER}/`, resource: 'https://mcp.example.com/' });
    expect(guard.metadataUrl).toBe('https://mcp.example.com/.well-known/oauth-protected-resource');
    expect(guard.metadata.authorization_servers).toEqual([ISSUER]);
    expect(() => protectedResource({ issuer: ISSUER, resource: 'https://mcp.example.com/#x' })).toThrow(/fragment/);
  });
});
