import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { SUPPORTED_SCOPES } from '../oauth/scopes.js';

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
});

/** RFC 8414 metadata: the spec's fields, plus RFC 9207 `iss` support and the auth methods. */
export function authorizationServerMetadata(issuer: string): z.infer<typeof metadataSchema> {
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
    token_endpoint_auth_methods_supported: ['client_secret_post'],
    code_challenge_methods_supported: ['S256'],
    scopes_supported: [...SUPPORTED_SCOPES],
    authorization_response_iss_parameter_supported: true,
    introspection_endpoint_auth_methods_supported: ['client_secret_post'],
    revocation_endpoint_auth_methods_supported: ['client_secret_post'],
  };
}

export default async function metadataRoutes(app: FastifyInstance) {
  const metadata = authorizationServerMetadata(app.services.config.issuer);
  app.get(
    '/.well-known/oauth-authorization-server',
    { schema: { tags: ['discovery'], description: 'Authorization server metadata (RFC 8414).', response: { 200: metadataSchema } } },
    async () => metadata,
  );
  // RFC 8414 §5: the same document at the OpenID Connect discovery path, for client libraries
  // (Auth.js among them) that only look there. No ID token is issued, so OIDC-only clients still fail.
  app.get(
    '/.well-known/openid-configuration',
    {
      schema: {
        tags: ['discovery'],
        description: 'The RFC 8414 metadata again, at the path that OpenID Connect discovery uses (RFC 8414 §5).',
        response: { 200: metadataSchema },
      },
    },
    async () => metadata,
  );
  // Tokens are HS256 (a shared secret), so there is no public key to publish.
  app.get(
    '/.well-known/jwks.json',
    {
      schema: {
        tags: ['discovery'],
        description: 'The JSON Web Key Set: always empty, since access tokens are signed with a shared secret (HS256).',
        response: { 200: z.object({ keys: z.array(z.never()) }) },
      },
    },
    async () => ({ keys: [] }),
  );
}
