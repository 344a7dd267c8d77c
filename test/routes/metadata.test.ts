import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeName } from '../helpers/database.js';
import { ISSUER, startTestServer, type TestServer } from '../helpers/server.js';

describe(`metadata and health (${storeName})`, () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it('serves RFC 8414 metadata with exactly the values docs/protocol.md lists', async () => {
    const res = await server.app.inject('/.well-known/oauth-authorization-server');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      issuer: ISSUER,
      authorization_endpoint: `${ISSUER}/authorize`,
      token_endpoint: `${ISSUER}/token`,
      userinfo_endpoint: `${ISSUER}/userinfo`,
      introspection_endpoint: `${ISSUER}/introspect`,
      revocation_endpoint: `${ISSUER}/revoke`,
      jwks_uri: `${ISSUER}/.well-known/jwks.json`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      token_endpoint_auth_methods_supported: ['client_secret_post', 'none', 'private_key_jwt'],
      code_challenge_methods_supported: ['S256'],
      scopes_supported: ['openid', 'email', 'profile'],
      authorization_response_iss_parameter_supported: true,
      introspection_endpoint_auth_methods_supported: ['client_secret_post', 'none', 'private_key_jwt'],
      revocation_endpoint_auth_methods_supported: ['client_secret_post', 'none', 'private_key_jwt'],
      agent_authentication_methods_supported: ['agent_secret', 'agent_assertion'],
      agent_assertion_signing_alg_values_supported: ['EdDSA', 'ES256'],
      resource_indicators_supported: true,
      token_endpoint_auth_signing_alg_values_supported: ['RS256', 'PS256', 'ES256', 'EdDSA'],
      client_id_metadata_document_supported: true,
      registration_endpoint: `${ISSUER}/register`,
      dpop_signing_alg_values_supported: ['ES256', 'EdDSA', 'Ed25519', 'RS256', 'PS256'],
    });
  });

  it('serves the same document at the OpenID Connect discovery path, without the openid scope (no ID tokens in this mode)', async () => {
    const rfc8414 = await server.app.inject('/.well-known/oauth-authorization-server');
    const oidc = await server.app.inject('/.well-known/openid-configuration');
    expect(oidc.statusCode).toBe(200);
    expect(oidc.json()).toEqual({ ...rfc8414.json(), scopes_supported: ['email', 'profile'] });
  });

  it('serves an empty JWKS', async () => {
    const res = await server.app.inject('/.well-known/jwks.json');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ keys: [] });
  });

  it('answers health and readiness', async () => {
    expect((await server.app.inject('/healthz')).json()).toEqual({ status: 'ok' });
    expect((await server.app.inject('/readyz')).statusCode).toBe(200);
  });

  it('sends the security headers with JSON answers too, a CSP that allows nothing and draws no nonce', async () => {
    for (const res of [
      await server.app.inject('/.well-known/oauth-authorization-server'),
      await server.app.inject('/userinfo'),
      await server.app.inject({ method: 'POST', url: '/token', payload: {} }),
    ]) {
      expect(res.headers['content-security-policy']).toBe("default-src 'none';frame-ancestors 'none'");
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['referrer-policy']).toBe('no-referrer');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['cross-origin-resource-policy']).toBe('same-origin');
      // An http ISSUER: no HSTS (RFC 6797 §7.2); with https, test/routes/token.test.ts.
      expect(res.headers['strict-transport-security']).toBeUndefined();
      // Helmet's headers for documents only: every API answer would pay for them.
      for (const name of ['cross-origin-opener-policy', 'origin-agent-cluster', 'x-dns-prefetch-control', 'x-download-options', 'x-xss-protection'])
        expect(res.headers[name], name).toBeUndefined();
    }
  });

  it('answers unknown paths with a JSON 404 as {error, error_description}', async () => {
    const res = await server.app.inject('/nope');
    expect(res.statusCode).toBe(404);
    expect(res.json()).toMatchObject({ error: 'not_found' });
  });
});
