import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postForm } from '../helpers/codes.js';
import { storeName } from '../helpers/database.js';
import { agentAuthenticate, completeInBrowser, startAuthorize } from '../helpers/flow.js';
import { startDocumentServer } from '../helpers/https-documents.js';
import { ISSUER, startTestServer, type TestServer } from '../helpers/server.js';

const REDIRECT = 'http://127.0.0.1/callback';

describe(`Client ID Metadata Documents (${storeName})`, () => {
  let server: TestServer;
  let documents: Awaited<ReturnType<typeof startDocumentServer>>;

  beforeAll(async () => {
    [server, documents] = await Promise.all([startTestServer(), startDocumentServer()]);
    server.services.clientDocuments.ca = documents.ca;
  });
  afterAll(async () => {
    await Promise.all([server.close(), documents.close()]);
  });

  /** A document at a new path; `fields` replace or (undefined) remove its members. */
  const publish = (fields: Record<string, unknown> = {}, reply: { status?: number; headers?: Record<string, string> } = {}) => {
    const path = `/clients/${randomUUID()}.json`;
    const clientId = `${documents.origin}${path}`;
    const body = Object.fromEntries(
      Object.entries({ client_id: clientId, client_name: 'Notes Desktop', redirect_uris: [REDIRECT], ...fields }).filter(([, v]) => v !== undefined),
    );
    documents.serve(path, { body, ...reply });
    return { clientId, path };
  };
  const authorize = (clientId: string, redirectUri = REDIRECT, extra: Record<string, string> = {}) =>
    startAuthorize(server, { client_id: clientId, redirect_uris: [redirectUri] }, extra);

  /** A whole sign-in through the document's client, up to the code. */
  async function codeFor(clientId: string, redirectUri = 'http://127.0.0.1:49152/callback') {
    const agent = await server.createAgent();
    const started = await authorize(clientId, redirectUri);
    expect(started.res.statusCode).toBe(200);
    const auth = await agentAuthenticate(server, { request_id: started.requestId, agent_id: agent.agent_id, agent_secret: agent.agent_secret });
    expect(auth.statusCode).toBe(200);
    const done = await completeInBrowser(server, started.requestId, started.cookie);
    expect(done.location?.startsWith(redirectUri)).toBe(true);
    return { code: done.code!, verifier: started.verifier, redirectUri, agent };
  }
  const exchange = (clientId: string, signIn: { code: string; verifier: string; redirectUri: string }, auth: Record<string, string> = {}) =>
    postForm(server, '/token', {
      grant_type: 'authorization_code',
      code: signIn.code,
      redirect_uri: signIn.redirectUri,
      code_verifier: signIn.verifier,
      client_id: clientId,
      ...auth,
    });

  it('signs in a public client named by its document, on any loopback port, and refreshes without a secret', async () => {
    const { clientId } = publish();
    const page = await authorize(clientId);
    expect(page.res.statusCode).toBe(200);
    expect(page.res.body).toContain('Notes Desktop');
    // The host of the client_id URL beside the name it gives itself, and the loopback warning.
    expect(page.res.body).toContain(`<strong id="client-id-host">${new URL(clientId).host}</strong>`);
    expect(page.res.body).toContain('id="loopback-warning"');

    const signIn = await codeFor(clientId);
    const tokens = await exchange(clientId, signIn);
    expect(tokens.statusCode).toBe(200);
    const refreshed = await postForm(server, '/token', {
      grant_type: 'refresh_token',
      refresh_token: tokens.json().refresh_token,
      client_id: clientId,
    });
    expect(refreshed.statusCode).toBe(200);
    // A secret is no way in for a client that has none.
    const withSecret = await postForm(server, '/token', {
      grant_type: 'refresh_token',
      refresh_token: refreshed.json().refresh_token,
      client_id: clientId,
      client_secret: 'guess',
    });
    expect(withSecret.statusCode).toBe(401);
  });

  it('refuses a document that names another client_id, redirects, is too large, wants a shared secret or is not there', async () => {
    const cases: [string, string, RegExp][] = [];
    cases.push([publish({ client_id: `${documents.origin}/clients/other.json` }).clientId, 'another client_id', /another client_id/]);
    const moved = publish();
    documents.serve(moved.path, { status: 302, headers: { location: `${documents.origin}/elsewhere.json` }, body: '' });
    cases.push([moved.clientId, 'a redirect', /redirects are not followed/]);
    cases.push([publish({ logo_uri: `https://x.example/${'a'.repeat(6 * 1024)}` }).clientId, '6 KB', /larger than 5120 bytes/]);
    cases.push([publish({ token_endpoint_auth_method: 'client_secret_basic' }).clientId, 'a shared-secret method', /token_endpoint_auth_method/]);
    cases.push([publish({ client_secret: 'x' }).clientId, 'a client_secret member', /client_secret members/]);
    cases.push([publish({ redirect_uris: ['http://app.example/cb'] }).clientId, 'a plain http redirect', /redirect_uris/]);
    cases.push([`${documents.origin}/clients/missing.json`, 'a 404', /answered 404/]);
    for (const [clientId, what, reason] of cases) {
      const { res } = await authorize(clientId);
      expect(res.statusCode, what).toBe(400);
      expect(res.headers.location, what).toBeUndefined();
      expect(res.body, what).toContain('invalid_client');
      expect(res.body, what).toMatch(reason);
    }
  });

  it('matches a loopback redirect on any port, and every other redirect exactly', async () => {
    const { clientId } = publish({ redirect_uris: [REDIRECT, 'https://app.example.com/cb'] });
    expect((await authorize(clientId, 'http://127.0.0.1:53682/callback')).res.statusCode).toBe(200);
    expect((await authorize(clientId, 'http://127.0.0.1:53682/other')).res.statusCode).toBe(400);
    expect((await authorize(clientId, 'https://app.example.com:8443/cb')).res.statusCode).toBe(400);
    expect((await authorize(clientId, 'https://app.example.com/cb')).res.statusCode).toBe(200);
    // No loopback warning for a client that can redirect elsewhere.
    expect((await authorize(clientId)).res.body).not.toContain('loopback-warning');
  });

  it('keeps a document for the lifetime its cache headers give (at least 30 s), and never keeps a failure', async () => {
    const cached = publish({}, { headers: { 'cache-control': 'max-age=600' } });
    await authorize(cached.clientId);
    await authorize(cached.clientId);
    expect(documents.hits(cached.path)).toBe(1);

    const uncacheable = publish({}, { headers: { 'cache-control': 'no-store' } });
    await authorize(uncacheable.clientId);
    await authorize(uncacheable.clientId);
    expect(documents.hits(uncacheable.path)).toBe(1);

    const failing = publish({ client_id: 'https://wrong.example/x' });
    expect((await authorize(failing.clientId)).res.statusCode).toBe(400);
    documents.serve(failing.path, { body: { client_id: failing.clientId, client_name: 'Fixed', redirect_uris: [REDIRECT] } });
    expect((await authorize(failing.clientId)).res.statusCode).toBe(200);
    expect(documents.hits(failing.path)).toBe(2);
  });

  it('authenticates a private_key_jwt client with a key of its document, and refuses a replayed assertion', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    const { clientId } = publish({ token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [jwk] } });
    const assertion = (audience = `${ISSUER}/token`) =>
      new SignJWT({ jti: randomUUID() })
        .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
        .setIssuer(clientId)
        .setSubject(clientId)
        .setAudience(audience)
        .setIssuedAt()
        .setExpirationTime('2m')
        .sign(privateKey);
    const asClient = (value: string) => ({
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: value,
    });

    const signIn = await codeFor(clientId);
    // Without its assertion, the client is refused.
    const bare = await codeFor(clientId);
    expect((await exchange(clientId, bare)).statusCode).toBe(401);

    const once = await assertion();
    const tokens = await exchange(clientId, signIn, asClient(once));
    expect(tokens.statusCode).toBe(200);
    const replayed = await postForm(server, '/token', { grant_type: 'refresh_token', refresh_token: tokens.json().refresh_token, ...asClient(once) });
    expect(replayed.statusCode).toBe(401);
    expect(replayed.json().error_description).toMatch(/jti was used already/);

    const wrongAudience = await postForm(server, '/token', {
      grant_type: 'refresh_token',
      refresh_token: tokens.json().refresh_token,
      ...asClient(await assertion('https://elsewhere.example')),
    });
    expect(wrongAudience.statusCode).toBe(401);
    const fresh = await postForm(server, '/token', {
      grant_type: 'refresh_token',
      refresh_token: tokens.json().refresh_token,
      ...asClient(await assertion()),
    });
    expect(fresh.statusCode).toBe(200);
    // Introspection with the same method.
    const introspected = await postForm(server, '/introspect', { token: fresh.json().access_token, ...asClient(await assertion(ISSUER)) });
    expect(introspected.json()).toMatchObject({ active: true, client_id: clientId });
  });
});

describe(`a Client ID Metadata Document on a special-use address (${storeName})`, () => {
  let server: TestServer;
  let documents: Awaited<ReturnType<typeof startDocumentServer>>;
  beforeAll(async () => {
    [server, documents] = await Promise.all([startTestServer({ ISSUER: 'https://auth.example.com' }), startDocumentServer()]);
    server.services.clientDocuments.ca = documents.ca;
  });
  afterAll(async () => {
    await Promise.all([server.close(), documents.close()]);
  });

  it('is never fetched when the issuer is not on loopback itself', async () => {
    const path = '/client.json';
    const clientId = documents.serve(path, { body: { client_id: `${documents.origin}${path}`, client_name: 'Local', redirect_uris: [REDIRECT] } });
    const { res } = await startAuthorize(server, { client_id: clientId, redirect_uris: [REDIRECT] });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('invalid_client');
    expect(res.body).toContain('special-use address');
    expect(documents.hits(path)).toBe(0);
  });
});
