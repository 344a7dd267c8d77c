import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { clientCredentials, param } from '../oauth/client-credentials.js';
import { clientCall, clientEndpoints } from '../plugins/client-endpoints.js';
import { noStoreWithPragma } from '../plugins/no-store.js';
import { issueTokens } from '../tokens/token-endpoint.js';
import { tokenResponseSchema } from '../tokens/token-response.js';
import { BODY_REFUSED, CLIENT_AUTH, errorResponses, FORM_OR_JSON, RATE_LIMITED, UNAVAILABLE } from './responses.js';

// Unknown parameters are ignored (RFC 6749 §3.2); known ones must be single strings.
const tokenEndpointBody = z.object({
  grant_type: param(100),
  code: param(512),
  redirect_uri: param(2000),
  code_verifier: param(512),
  refresh_token: param(512),
  scope: param(1000),
  // Several values are refused (invalid_target), so both shapes pass the schema.
  resource: z.union([param(2000), z.array(z.string().max(2000)).max(10)]),
  ...clientCredentials,
});

const schema = {
  tags: ['oauth'],
  description:
    'Exchanges an authorization code (grant_type=authorization_code with code, redirect_uri and the PKCE code_verifier) ' +
    'or a refresh token (grant_type=refresh_token, optionally with a narrower scope) for an access token and a new ' +
    'refresh token. The client authenticates with client_id and client_secret in the body, or with HTTP Basic. resource ' +
    '(RFC 8707): the registered resource of the sign-in (or leave it out), for its JWT access token. With a DPoP ' +
    'header (a proof, RFC 9449 §4), the tokens are bound to its key and token_type is "DPoP".',
  consumes: FORM_OR_JSON,
  security: CLIENT_AUTH,
  body: tokenEndpointBody,
  response: {
    200: tokenResponseSchema,
    ...errorResponses({
      400:
        "invalid_request, invalid_grant (code or refresh token unknown, expired, used or another client's; another DPoP key than " +
        "the grant's), unsupported_grant_type or invalid_scope (RFC 6749 §5.2); invalid_target (RFC 8707); invalid_dpop_proof, or " +
        'use_dpop_nonce with a DPoP-Nonce header (RFC 9449 §5, §8)',
      401: 'invalid_client: unknown or inactive client, or wrong secret',
      ...BODY_REFUSED,
      429: RATE_LIMITED,
      503: UNAVAILABLE,
    }),
  },
};

/** POST /token (RFC 6749 §3.2): form-urlencoded or JSON; the grant type picks the handler. */
export default async function tokenRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.addHook('onRequest', noStoreWithPragma);
  await app.register(clientEndpoints);

  app.post('/token', { schema }, async (request, reply) => {
    // RFC 9449 §5: a DPoP proof binds the tokens to its key.
    const { dpop } = app.services;
    const proof = await dpop.check(request.headers.dpop, { method: 'POST', path: '/token' });
    // Every answer to a proof carries the nonce (§8.2), refusals included: a website may demand one.
    if (proof) reply.header('dpop-nonce', dpop.nonce());
    return issueTokens(app.services, clientCall(request), proof ? { ...request.body, dpop: proof } : request.body, { log: request.log });
  });
}
