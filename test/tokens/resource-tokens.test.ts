import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exchangeCode, introspect, postForm, refresh, revoke, userinfo } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { signInToCode, startAuthorize } from '../helpers/flow.js';
import { ISSUER, startTestServer, type TestServer } from '../helpers/server.js';

const MCP = 'https://mcp.example.com';
const OTHER = 'https://other-mcp.example.com/mcp';

describe(`resources and their tokens (${storeName})`, () => {
  let server: TestServer;
  let owner: Awaited<ReturnType<TestServer['createClient']>>;
  let otherOwner: Awaited<ReturnType<TestServer['createClient']>>;

  beforeAll(async () => {
    server = await startTestServer();
    owner = await server.createClient();
    otherOwner = await server.createClient();
  });
  afterAll(() => server.close());

  const jwks = async () => (await server.app.inject({ url: '/.well-known/jwks.json' })).json();
  const signInFor = (resource: string | undefined, scope?: string) =>
    signInToCode(server, { ...(resource === undefined ? {} : { authorize: { resource } }), scope });

  it('publishes no key before a resource exists, and registers one under its canonical identifier', async () => {
    expect(await jwks()).toEqual({ keys: [] });
    const created = await server.adminCall('POST', '/admin/resources', { resource: `${MCP}/`, name: 'Notes MCP', client_id: owner.client_id });
    expect(created.statusCode).toBe(201);
    expect(created.json).toEqual({
      resource: MCP,
      name: 'Notes MCP',
      scopes: ['openid', 'email', 'profile'],
      client_id: owner.client_id,
      signing_alg: 'RS256',
      created_at: expect.any(String),
    });
    // The same resource, with or without its trailing slash.
    expect((await server.adminCall('POST', '/admin/resources', { resource: MCP, name: 'Again' })).statusCode).toBe(409);
    expect((await server.adminCall('GET', `/admin/resources/${encodeURIComponent(`${MCP}/`)}`)).json.name).toBe('Notes MCP');
    const other = await server.adminCall('POST', '/admin/resources', {
      resource: OTHER,
      name: 'Other',
      scopes: ['mcp:tools', 'email'],
      client_id: otherOwner.client_id,
    });
    expect(other.statusCode).toBe(201);
    expect((await server.adminCall('GET', '/admin/resources')).json.resources.map((r: { resource: string }) => r.resource)).toEqual([MCP, OTHER]);
    const keys = (await jwks()).keys;
    expect(keys.map((k: { alg: string }) => k.alg)).toContain('RS256');
    const audit = await server.adminCall('GET', '/admin/audit?event=resource_created');
    expect(audit.json.events[0]).toMatchObject({ actor: 'admin', detail: { resource: OTHER } });
  });

  it('refuses bad registrations with a clear 400', async () => {
    for (const resource of ['http://mcp.example.com', 'https://mcp.example.com/#x', 'not a url', 'https://user:pw@mcp.example.com']) {
      const res = await server.adminCall('POST', '/admin/resources', { resource, name: 'Bad' });
      expect(res.statusCode, resource).toBe(400);
      expect(res.json.error).toBe('invalid_request');
    }
    const unknownClient = await server.adminCall('POST', '/admin/resources', { resource: 'https://x.example', name: 'X', client_id: 'client_nope' });
    expect(unknownClient).toMatchObject({ statusCode: 400, json: { error: 'invalid_request' } });
    const badScope = await server.adminCall('POST', '/admin/resources', { resource: 'https://x.example', name: 'X', scopes: ['a b'] });
    expect(badScope.statusCode).toBe(400);
    expect((await server.adminCall('POST', '/admin/resources', { resource: 'http://127.0.0.1:8080/mcp/', name: 'Local' })).json.resource).toBe(
      'http://127.0.0.1:8080/mcp',
    );
    expect((await server.adminCall('DELETE', `/admin/resources/${encodeURIComponent('http://127.0.0.1:8080/mcp')}`)).statusCode).toBe(204);
    expect((await server.adminCall('DELETE', `/admin/resources/${encodeURIComponent('http://127.0.0.1:8080/mcp')}`)).statusCode).toBe(404);
  });

  it('answers an unknown resource, or two, with an error redirect carrying state and iss', async () => {
    const client = await server.createClient();
    for (const resource of ['https://unknown.example.com', [MCP, OTHER]]) {
      const query = new URLSearchParams({
        client_id: client.client_id,
        redirect_uri: client.redirect_uris[0],
        response_type: 'code',
        state: 'st4te',
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
      });
      for (const r of [resource].flat()) query.append('resource', r);
      const res = await server.app.inject({ url: `/authorize?${query}` });
      expect(res.statusCode).toBe(302);
      const location = new URL(res.headers.location as string);
      expect(`${location.origin}${location.pathname}`).toBe(client.redirect_uris[0]);
      expect(Object.fromEntries(location.searchParams)).toMatchObject({ error: 'invalid_target', state: 'st4te', iss: ISSUER });
    }
  });

  it("limits the scopes to the resource's own", async () => {
    const client = await server.createClient();
    const started = await startAuthorize(server, client, { resource: OTHER, scope: 'mcp:tools openid' });
    expect(started.res.statusCode).toBe(400);
    expect(started.res.body).toContain('invalid_scope');
    expect((await startAuthorize(server, client, { resource: OTHER, scope: 'mcp:tools' })).res.statusCode).toBe(200);
  });

  it('issues an RFC 9068 JWT for the resource, verifiable against the JWKS, with or without the trailing slash', async () => {
    for (const [named, atToken] of [
      [`${MCP}/`, undefined],
      [MCP, `${MCP}/`],
    ] as const) {
      const { client, code, verifier } = await signInFor(named);
      const res = await exchangeCode(server, client, code, verifier, { resource: atToken });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 300, scope: 'openid email profile' });
      const header = decodeProtectedHeader(body.access_token);
      expect(header).toMatchObject({ typ: 'at+jwt', alg: 'RS256', kid: expect.any(String) });
      const { payload } = await jwtVerify(body.access_token, createLocalJWKSet(await jwks()), {
        issuer: ISSUER,
        audience: MCP,
        typ: 'at+jwt',
      });
      expect(Object.keys(payload).sort()).toEqual(['aud', 'client_id', 'email', 'exp', 'iat', 'iss', 'jti', 'scope', 'sub'].sort());
      expect(payload).toMatchObject({ aud: MCP, client_id: client.client_id, scope: 'openid email profile' });
      expect(payload.exp! - payload.iat!).toBe(300);
    }
  });

  it('keeps the email out of a token whose scope does not share it, and leaves tokens without a resource as they were', async () => {
    const { client, code, verifier } = await signInFor(OTHER, 'mcp:tools');
    const body = (await exchangeCode(server, client, code, verifier)).json();
    const { payload } = await jwtVerify(body.access_token, createLocalJWKSet(await jwks()), { audience: OTHER });
    expect(payload.email).toBeUndefined();
    expect(payload.scope).toBe('mcp:tools');

    const plain = await signInFor(undefined);
    const token = (await exchangeCode(server, plain.client, plain.code, plain.verifier)).json();
    expect(decodeProtectedHeader(token.access_token)).toMatchObject({ alg: 'HS256' });
    expect(token.expires_in).toBe(3600);
  });

  it('refuses a code exchange for another resource, or for a resource the sign-in did not name', async () => {
    const forMcp = await signInFor(MCP);
    const other = await exchangeCode(server, forMcp.client, forMcp.code, forMcp.verifier, { resource: OTHER });
    expect(other.statusCode).toBe(400);
    expect(other.json().error).toBe('invalid_target');

    const plain = await signInFor(undefined);
    const widened = await exchangeCode(server, plain.client, plain.code, plain.verifier, { resource: MCP });
    expect(widened.json().error).toBe('invalid_target');

    const twice = await signInFor(MCP);
    const res = await postForm(server, '/token', {
      grant_type: 'authorization_code',
      code: twice.code,
      redirect_uri: twice.client.redirect_uris[0],
      code_verifier: twice.verifier,
      client_id: twice.client.client_id,
      client_secret: twice.client.client_secret,
      resource: [MCP, OTHER],
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_target');
  });

  it('refreshes within the grant’s resource only', async () => {
    const { client, code, verifier } = await signInFor(MCP);
    const first = (await exchangeCode(server, client, code, verifier)).json();
    const other = await refresh(server, client, first.refresh_token, { resource: OTHER });
    expect(other.statusCode).toBe(400);
    expect(other.json().error).toBe('invalid_target');
    // Refused without spending the token.
    const same = await refresh(server, client, first.refresh_token, { resource: `${MCP}/`, scope: 'email' });
    expect(same.statusCode).toBe(200);
    const { payload } = await jwtVerify(same.json().access_token, createLocalJWKSet(await jwks()), { audience: MCP });
    expect(payload.scope).toBe('email');
    const omitted = (await refresh(server, client, same.json().refresh_token)).json();
    expect(decodeProtectedHeader(omitted.access_token).alg).toBe('RS256');

    const plain = await signInFor(undefined);
    const plainTokens = (await exchangeCode(server, plain.client, plain.code, plain.verifier)).json();
    const widened = await refresh(server, plain.client, plainTokens.refresh_token, { resource: MCP });
    expect(widened.json().error).toBe('invalid_target');
  });

  it("answers introspection by the resource's website and the client, never by another resource's website; userinfo takes the token", async () => {
    const { client, code, verifier, agent } = await signInFor(MCP);
    const tokens = (await exchangeCode(server, client, code, verifier)).json();
    const asOwner = (await introspect(server, owner, tokens.access_token)).json();
    expect(asOwner).toMatchObject({ active: true, aud: MCP, client_id: client.client_id, sub: agent.agent_id, token_type: 'access_token' });
    expect((await introspect(server, client, tokens.access_token)).json().active).toBe(true);
    // A token for resource A presented by resource B's website.
    expect((await introspect(server, otherOwner, tokens.access_token)).json()).toEqual({ active: false });
    expect((await userinfo(server, tokens.access_token)).json()).toEqual({ sub: agent.agent_id, email: agent.email });

    // Revocation of the grant (its refresh token) ends the access token at once, and the refresh token everywhere.
    expect((await revoke(server, client, tokens.refresh_token)).statusCode).toBe(200);
    expect((await introspect(server, owner, tokens.access_token)).json()).toEqual({ active: false });
    expect((await userinfo(server, tokens.access_token)).statusCode).toBe(401);
    expect((await refresh(server, client, tokens.refresh_token)).json().error).toBe('invalid_grant');
  });

  it('ends the tokens of a deactivated agent at once', async () => {
    const { client, code, verifier, agent } = await signInFor(MCP);
    const tokens = (await exchangeCode(server, client, code, verifier)).json();
    expect((await introspect(server, owner, tokens.access_token)).json().active).toBe(true);
    expect((await server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { active: false })).statusCode).toBe(200);
    expect((await introspect(server, owner, tokens.access_token)).json()).toEqual({ active: false });
  });
});
