import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeExpired } from '../../src/jobs/purge.js';
import { postForm } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, completeInBrowser, startAuthorize } from '../helpers/flow.js';
import { ISSUER, startTestServer, type TestServer } from '../helpers/server.js';

const register = (server: TestServer, body: unknown, address = '203.0.113.7') =>
  server.app.inject({ method: 'POST', url: '/register', payload: body as object, remoteAddress: address });

describe(`dynamic client registration (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ RATE_LIMIT_REGISTER_PER_IP: '3' });
  });
  afterAll(() => server.close());

  it('registers a public client that signs in on any loopback port and exchanges its code without a secret', async () => {
    const res = await register(server, {
      client_name: 'Claude Desktop',
      redirect_uris: ['http://127.0.0.1/callback'],
      token_endpoint_auth_method: 'none',
    });
    expect(res.statusCode).toBe(201);
    const client = res.json();
    expect(client).toEqual({
      client_id: expect.stringMatching(/^client_/),
      client_id_issued_at: expect.any(Number),
      client_name: 'Claude Desktop',
      redirect_uris: ['http://127.0.0.1/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    });
    expect(res.headers['cache-control']).toBe('no-store');

    const redirectUri = 'http://127.0.0.1:61000/callback';
    const started = await startAuthorize(server, { client_id: client.client_id, redirect_uris: [redirectUri] });
    expect(started.res.statusCode).toBe(200);
    expect(started.res.body).toContain('id="loopback-warning"');
    const agent = await server.createAgent();
    expect(
      (await agentAuthenticate(server, { request_id: started.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret })).statusCode,
    ).toBe(200);
    const { code } = await completeInBrowser(server, started.requestId, started.cookie);
    const tokens = await postForm(server, '/token', {
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      code_verifier: started.verifier,
      client_id: client.client_id,
    });
    expect(tokens.statusCode).toBe(200);
    // The admin API lists it, as what it is.
    const listed = (await server.adminCall('GET', `/admin/clients/${client.client_id}`)).json;
    expect(listed).toMatchObject({ name: 'Claude Desktop' });
  });

  it('refuses what is not a public client with redirect URIs by the rules for websites', async () => {
    const refusals: [unknown, string][] = [
      [{ client_name: 'X' }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['http://app.example.com/cb'] }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['https://app.example.com/cb#x'] }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['https://app.example.com/cb'], token_endpoint_auth_method: 'client_secret_basic' }, 'invalid_client_metadata'],
      [{ redirect_uris: ['https://app.example.com/cb'], grant_types: ['client_credentials'] }, 'invalid_client_metadata'],
      [{ redirect_uris: ['https://app.example.com/cb'], client_name: 'a\u202eb' }, 'invalid_client_metadata'],
    ];
    for (const [i, [body, error]] of refusals.entries()) {
      // One budget per address: a fresh address each time, so the limit does not answer first.
      const res = await register(server, body, `203.0.113.${10 + i}`);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error, JSON.stringify(body)).toBe(error);
    }
  });

  it('limits registrations per address', async () => {
    const body = { redirect_uris: ['https://app.example.com/cb'] };
    for (let i = 0; i < 3; i++) expect((await register(server, body, '198.51.100.20')).statusCode).toBe(201);
    const limited = await register(server, body, '198.51.100.20');
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['retry-after']).toBeDefined();
    expect((await register(server, body, '198.51.100.21')).statusCode).toBe(201);
  });

  it('purges a registration that never started a sign-in once its time is up, and keeps one that did', async () => {
    const unused = (await register(server, { redirect_uris: ['https://unused.example.com/cb'] }, '192.0.2.50')).json();
    const used = (await register(server, { redirect_uris: ['https://used.example.com/cb'] }, '192.0.2.50')).json();
    expect((await startAuthorize(server, used)).res.statusCode).toBe(200);
    await server.services.db.query(`UPDATE clients SET created_at = now() - interval '2 days' WHERE id = ANY($1)`, [
      [unused.client_id, used.client_id],
    ]);
    await purgeExpired(server.services, { auditRetentionDays: 365, auditRetentionWithoutAgentDays: 365, log: server.app.log });
    expect((await server.adminCall('GET', `/admin/clients/${unused.client_id}`)).statusCode).toBe(404);
    expect((await server.adminCall('GET', `/admin/clients/${used.client_id}`)).statusCode).toBe(200);
  });
});

describe(`dynamic client registration switched off (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ DYNAMIC_REGISTRATION: 'off' });
  });
  afterAll(() => server.close());

  it('refuses every registration and leaves the endpoint out of the metadata', async () => {
    const res = await register(server, { redirect_uris: ['https://app.example.com/cb'] });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ error: 'forbidden' });
    const metadata = (await server.app.inject('/.well-known/oauth-authorization-server')).json();
    expect(metadata.registration_endpoint).toBeUndefined();
    expect(metadata.client_id_metadata_document_supported).toBe(true);
  });
});

describe(`the agent's own client metadata document (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it('lists the agent’s keys, signs the agent in through it with private_key_jwt, and is 404 for an unknown or inactive agent', async () => {
    const agent = await server.createAgent();
    const { privateKey, publicKey } = await generateKeyPair('EdDSA', { crv: 'Ed25519' });
    const added = await server.adminCall('POST', `/admin/agents/${agent.agent_id}/keys`, { jwk: await exportJWK(publicKey) });
    expect(added.statusCode).toBe(201);
    const url = `/agents/${agent.agent_id}/client-metadata.json`;
    const doc = (await server.app.inject(url)).json();
    const clientId = `${ISSUER}${url}`;
    expect(doc).toEqual({
      client_id: clientId,
      client_name: expect.any(String),
      redirect_uris: ['http://127.0.0.1/callback', 'http://[::1]/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'private_key_jwt',
      jwks: { keys: [expect.objectContaining({ kid: added.json.kid, alg: 'EdDSA', kty: 'OKP', crv: 'Ed25519' })] },
    });

    // Used as client_id, it resolves here (no HTTP fetch of our own issuer), for this agent only.
    const redirectUri = 'http://127.0.0.1:40111/callback';
    const started = await startAuthorize(server, { client_id: clientId, redirect_uris: [redirectUri] });
    expect(started.res.statusCode).toBe(200);
    const other = await server.createAgent();
    expect(
      (await agentAuthenticate(server, { request_id: started.requestId, agent_id: other.agent_id, agent_secret: other.agent_secret })).statusCode,
    ).toBe(403);
    expect(
      (await agentAuthenticate(server, { request_id: started.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret })).statusCode,
    ).toBe(200);
    const { code } = await completeInBrowser(server, started.requestId, started.cookie);
    const assertion = await new SignJWT({ jti: randomUUID() })
      .setProtectedHeader({ alg: 'EdDSA', kid: added.json.kid })
      .setIssuer(clientId)
      .setSubject(clientId)
      .setAudience(ISSUER)
      .setIssuedAt()
      .setExpirationTime('1m')
      .sign(privateKey);
    const tokens = await postForm(server, '/token', {
      grant_type: 'authorization_code',
      code,
      redirect_uri: redirectUri,
      code_verifier: started.verifier,
      client_id: clientId,
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: assertion,
    });
    expect(tokens.statusCode).toBe(200);

    expect((await server.app.inject('/agents/agent_unknown/client-metadata.json')).statusCode).toBe(404);
    await server.adminCall('PATCH', `/admin/agents/${agent.agent_id}`, { active: false });
    expect((await server.app.inject(url)).statusCode).toBe(404);
    expect((await startAuthorize(server, { client_id: clientId, redirect_uris: [redirectUri] })).res.statusCode).toBe(400);
  });
});
