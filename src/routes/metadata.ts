import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { CLIENT_ASSERTION_ALGORITHMS } from '../clients/client-assertion.js';
import { DPOP_ALGS } from '../dpop/proof.js';
import { SUPPORTED_SCOPES } from '../oauth/scopes.js';
import { AGENT_ASSERTION, AGENT_AUTHENTICATION_METHODS } from '../protocol/sign-in.js';
import { SIGNING_ALGS } from '../protocol/signing.js';

const url = z.string();
const values = z.array(z.string());
// The serializer drops fields this does not name; typing the function by it keeps the two in step.
const metadataSchema = z.object({
  issuer: url,
  authorization_endpoint: url,
  token_endpoint: url,
  userinfo_endpoint: url,
  introspection_endpoint: url,
  revocation_endpoint: url,
  jwks_uri: url,
  response_types_supported: values,
  grant_types_supported: values,
  token_endpoint_auth_methods_supported: values,
  code_challenge_methods_supported: values,
  scopes_supported: values,
  authorization_response_iss_parameter_supported: z.boolean(),
  introspection_endpoint_auth_methods_supported: values,
  revocation_endpoint_auth_methods_supported: values,
  agent_authentication_methods_supported: values,
  agent_assertion_signing_alg_values_supported: values,
  resource_indicators_supported: z.boolean(),
  token_endpoint_auth_signing_alg_values_supported: values,
  client_id_metadata_document_supported: z.boolean(),
  registration_endpoint: url.optional(),
  dpop_signing_alg_values_supported: values,
});

// client_secret_post first: the method of the websites an operator registers (docs/protocol.md).
const CLIENT_AUTH_METHODS = ['client_secret_post', 'none', 'private_key_jwt'];

/**
 * RFC 8414 metadata: the fields docs/protocol.md lists, plus RFC 9207 `iss` support, the auth
 * methods, and how agents may authenticate (both documents carry it). `registration`: dynamic
 * registration is open (DYNAMIC_REGISTRATION).
 */
export function authorizationServerMetadata(issuer: string, registration: boolean): z.infer<typeof metadataSchema> {
  return {
    issuer,
    authorization_endpoint: `${issuer}/authorize`,
    token_endpoint: `${issuer}/token`,
    userinfo_endpoint: `${issuer}/userinfo`,
    introspection_endpoint: `${issuer}/introspect`,
    revocation_endpoint: `${issuer}/revoke`,
    jwks_uri: `${issuer}/.well-known/jwks.json`,
    response_types_supported: ['code'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    code_challenge_methods_supported: ['S256'],
    scopes_supported: [...SUPPORTED_SCOPES],
    authorization_response_iss_parameter_supported: true,
    introspection_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    revocation_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    agent_authentication_methods_supported: [...AGENT_AUTHENTICATION_METHODS],
    agent_assertion_signing_alg_values_supported: [...AGENT_ASSERTION.algorithms],
    // RFC 8707: tokens for registered resources (docs/protocol.md, "Resources").
    resource_indicators_supported: true,
    token_endpoint_auth_signing_alg_values_supported: [...CLIENT_ASSERTION_ALGORITHMS],
    // draft-ietf-oauth-client-id-metadata-document and RFC 7591 (docs/protocol.md, "MCP clients").
    client_id_metadata_document_supported: true,
    ...(registration && { registration_endpoint: `${issuer}/register` }),
    // RFC 9449 §5.1: the algorithms of DPoP proofs.
    dpop_signing_alg_values_supported: [...DPOP_ALGS],
  };
}

// OpenID Connect Discovery 1.0 §3: what OpenID Connect mode adds to the RFC 8414 fields.
const openidSchema = metadataSchema.extend({
  subject_types_supported: values,
  id_token_signing_alg_values_supported: values,
  response_modes_supported: values,
  claims_supported: values,
  claims_parameter_supported: z.boolean(),
  request_parameter_supported: z.boolean(),
  request_uri_parameter_supported: z.boolean(),
  backchannel_logout_supported: z.boolean(),
  backchannel_logout_session_supported: z.boolean(),
});
const discoverySchema = z.union([openidSchema, metadataSchema]);

/** The ID token's claims (docs/interop.md). */
const ID_TOKEN_CLAIMS = ['iss', 'sub', 'aud', 'azp', 'iat', 'exp', 'auth_time', 'nonce', 'at_hash', 'sid', 'email', 'email_verified', 'model'];

/**
 * What /.well-known/openid-configuration says. In OpenID Connect mode, OpenID Connect Discovery
 * metadata. Otherwise the RFC 8414 document (RFC 8414 §5 allows it there) without the openid
 * scope, so that no client takes the server for an OpenID Provider and waits for an ID token
 * (docs/interop.md).
 */
export function discoveryMetadata(issuer: string, oidc: boolean, registration: boolean): z.infer<typeof discoverySchema> {
  const metadata = authorizationServerMetadata(issuer, registration);
  return oidc ? openidMetadata(issuer, registration) : { ...metadata, scopes_supported: metadata.scopes_supported.filter((s) => s !== 'openid') };
}

/**
 * In OpenID Connect mode both documents say this, so that a client discovering through either
 * can validate every ID token: all three algorithms are listed (a website may register any),
 * RS256 first, the one clients assume (OpenID Connect Discovery §3).
 */
function openidMetadata(issuer: string, registration: boolean): z.infer<typeof openidSchema> {
  return {
    ...authorizationServerMetadata(issuer, registration),
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [...SIGNING_ALGS],
    response_modes_supported: ['query'],
    claims_supported: ID_TOKEN_CLAIMS,
    // Not supported; request_uri_parameter_supported defaults to true, so it must be said.
    claims_parameter_supported: false,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    // OpenID Connect Back-Channel Logout 1.0 §2.1: logout tokens, with the sid of the ID tokens.
    backchannel_logout_supported: true,
    backchannel_logout_session_supported: true,
  };
}

const publishedKey = z.object({
  kty: z.string(),
  kid: z.string(),
  alg: z.string(),
  use: z.literal('sig'),
  n: z.string().optional(),
  e: z.string().optional(),
  crv: z.string().optional(),
  x: z.string().optional(),
  y: z.string().optional(),
});

export default async function metadataRoutes(app: FastifyInstance) {
  const { config, store, openSigningKeys } = app.services;
  const oidcKeys = app.services.signingKeys;
  const oidc = config.idTokenSigningAlg !== undefined;
  const registration = config.dynamicRegistration.open;
  const metadata = oidc ? openidMetadata(config.issuer, registration) : authorizationServerMetadata(config.issuer, registration);
  const discovery = discoveryMetadata(config.issuer, oidc, registration);
  app.get(
    '/.well-known/oauth-authorization-server',
    {
      schema: {
        tags: ['discovery'],
        description: 'Authorization server metadata (RFC 8414); in OpenID Connect mode with the same OpenID fields as the discovery document.',
        response: { 200: discoverySchema },
      },
    },
    async () => metadata,
  );
  // Client libraries that only look at this path (Auth.js among them) find the endpoints here in both modes.
  app.get(
    '/.well-known/openid-configuration',
    {
      schema: {
        tags: ['discovery'],
        description:
          'OpenID Connect Discovery 1.0 metadata when ID_TOKEN_SIGNING_ALG is set; otherwise the RFC 8414 metadata ' +
          '(RFC 8414 §5) without the openid scope, since no ID token is issued.',
        response: { 200: discoverySchema },
      },
    },
    async () => discovery,
  );
  // Websites' access tokens are HS256 (a shared secret, never published). The keys appear here in
  // OpenID Connect mode (ID tokens) and once a resource is registered (its JWT access tokens): a
  // resource seen is believed for a second (anyone may ask, as often as they like); none seen is
  // asked again, so the keys appear as soon as the first resource does.
  let resourcesSeenAt = -Infinity;
  const publishing = async () => {
    if (oidcKeys || Date.now() - resourcesSeenAt < 1000) return true;
    if (!(await store.resources.any())) return false;
    resourcesSeenAt = Date.now();
    return true;
  };
  app.get(
    '/.well-known/jwks.json',
    {
      schema: {
        tags: ['discovery'],
        description:
          'The JSON Web Key Set: the public keys that sign ID tokens (OpenID Connect mode) and the access tokens of ' +
          "resources (once one is registered), current and recently retired; empty otherwise, since websites' access " +
          'tokens are signed with a shared secret (HS256).',
        response: { 200: z.object({ keys: z.array(publishedKey) }) },
      },
    },
    async () => ({ keys: (await publishing()) ? await (await openSigningKeys()).published() : [] }),
  );
}
