import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { sha256 } from '../crypto/secrets.js';
import { InvalidRequest } from '../errors.js';
import { liveAccessToken } from '../oauth/access-token.js';
import { clientAuthentication, tokenRequest } from '../oauth/client-auth.js';
import { noStore } from '../oauth/no-store.js';
import { isRefreshTokenFormat } from '../oauth/refresh-token.js';
import { CLIENT_AUTH, errorResponses, FORM_OR_JSON, RATE_LIMITED, UNAVAILABLE } from '../openapi.js';
import type { Services } from '../services.js';

const epoch = (date: Date) => Math.floor(date.getTime() / 1000);

async function introspectAccessToken(services: Services, token: string, clientId: string) {
  const live = await liveAccessToken(services, token);
  if (!live || live.claims.client_id !== clientId) return undefined;
  return { active: true as const, ...live.claims, token_type: 'access_token' };
}

/** A refresh token has no jti; its iat and exp are when it was issued and when it expires. */
async function introspectRefreshToken(services: Services, token: string, clientId: string) {
  const live = await services.store.grants.findRefreshToken(sha256(token), clientId);
  if (!live) return undefined;
  return {
    active: true as const,
    sub: live.agent_id,
    client_id: live.client_id,
    scope: live.scope,
    exp: epoch(live.expires_at),
    iat: epoch(live.created_at),
    iss: services.config.issuer,
    aud: live.client_id,
    token_type: 'refresh_token',
    model: live.model,
  };
}

const introspectionResponse = z.object({
  active: z.boolean(),
  sub: z.string().optional(),
  client_id: z.string().optional(),
  scope: z.string().optional(),
  exp: z.number().int().optional(),
  iat: z.number().int().optional(),
  iss: z.string().optional(),
  aud: z.string().optional(),
  jti: z.string().optional(),
  token_type: z.string().optional(),
  model: z.string().optional(),
});

const schema = {
  tags: ['oauth'],
  description:
    'Tells a client whether one of its tokens, access or refresh, is active, and what it carries (RFC 7662). ' +
    'Tokens of other clients, and unknown, expired or revoked ones, are {"active": false}.',
  consumes: FORM_OR_JSON,
  security: CLIENT_AUTH,
  body: tokenRequest,
  response: {
    200: introspectionResponse,
    ...errorResponses({
      400: 'invalid_request: token is missing',
      401: 'invalid_client: unknown or inactive client, or wrong secret',
      429: RATE_LIMITED,
      503: UNAVAILABLE,
    }),
  },
};

/**
 * POST /introspect (RFC 7662). A client learns only about its own tokens: anything else,
 * including a live token of another client, is `{active: false}`.
 */
export default async function introspectRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.addHook('onRequest', noStore);
  await app.register(clientAuthentication);

  app.post('/introspect', { schema }, async (request) => {
    const { token } = request.body;
    if (!token) throw new InvalidRequest('token is required');
    const introspect = isRefreshTokenFormat(token) ? introspectRefreshToken : introspectAccessToken;
    return (await introspect(app.services, token, request.client.client_id)) ?? { active: false };
  });
}
