import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { sha256 } from '../crypto/secrets.js';
import { InvalidRequest } from '../errors.js';
import { type AccessTokenClaims, grantIdOf, verifyAccessToken } from '../oauth/access-token.js';
import {
  authenticateClient,
  omitEmptyParameters,
  type PresentedCredentials as Credentials,
  presentedCredentials,
  presentedTokenBody,
} from '../oauth/client-auth.js';
import { isRefreshTokenFormat } from '../oauth/refresh-token-format.js';
import { clientBudget } from '../plugins/client-auth.js';
import { noStore } from '../plugins/no-store.js';
import { CLIENT_AUTH, FORM_OR_JSON, sendJsonText, TOKEN_OPERATION_ERRORS } from './responses.js';

const epoch = (date: Date) => Math.floor(date.getTime() / 1000);

type Answer = z.infer<typeof introspectionResponse>;
/** An answer's JSON text: the handlers below build it from checked values, so it is sent as it is. */
type AnswerText = string;
const INACTIVE: AnswerText = JSON.stringify({ active: false } satisfies Answer);

/**
 * An active access token's answer depends on its claims alone, and every check of the same token
 * shares one claims object (src/oauth/access-token.ts): it is serialised once per token, not per call.
 */
const activeAnswers = new WeakMap<AccessTokenClaims, AnswerText>();
function activeAnswer(claims: AccessTokenClaims): AnswerText {
  let text = activeAnswers.get(claims);
  if (text === undefined)
    activeAnswers.set(claims, (text = JSON.stringify({ active: true, ...claims, token_type: 'access_token' } satisfies Answer)));
  return text;
}

/**
 * Each reads the asking client together with the token (one round trip) and authenticates the
 * client before it looks at what was found.
 */
async function introspectAccessToken(request: FastifyRequest, credentials: Credentials, token: string): Promise<AnswerText> {
  const { services } = request.server;
  const claims = verifyAccessToken(services, token);
  let found: { agent_id: string } | undefined;
  // A token of the asking client is read along with the client; any other token is inactive for it.
  await authenticateClient(request, credentials, async (clientId) => {
    if (claims?.client_id !== clientId) return services.store.clients.getWithSecret(clientId);
    const read = await services.store.grants.introspectAccessToken(clientId, grantIdOf(claims.jti), claims.jti);
    found = read?.token;
    return read?.client;
  });
  if (!claims || found?.agent_id !== claims.sub) return INACTIVE;
  return activeAnswer(claims);
}

/** A refresh token has no jti; its iat and exp are when it was issued and when it expires. */
async function introspectRefreshToken(request: FastifyRequest, credentials: Credentials, token: string): Promise<AnswerText> {
  const { services } = request.server;
  let read: Awaited<ReturnType<typeof services.store.grants.introspectRefreshToken>>;
  await authenticateClient(request, credentials, async (clientId) => {
    read = await services.store.grants.introspectRefreshToken(clientId, sha256(token));
    return read?.client;
  });
  const live = read?.token;
  if (!live) return INACTIVE;
  return JSON.stringify({
    active: true,
    sub: live.agent_id,
    client_id: live.client_id,
    scope: live.scope,
    exp: epoch(live.expires_at),
    iat: epoch(live.created_at),
    iss: services.config.issuer,
    aud: live.client_id,
    token_type: 'refresh_token',
    model: live.model,
  } satisfies Answer);
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
  body: presentedTokenBody,
  response: {
    200: introspectionResponse,
    ...TOKEN_OPERATION_ERRORS,
  },
};

/**
 * POST /introspect (RFC 7662). A client learns only about its own tokens: anything else,
 * including a live token of another client, is `{active: false}`.
 */
export default async function introspectRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.addHook('onRequest', noStore);
  await app.register(clientBudget);
  app.addHook('preValidation', omitEmptyParameters);

  app.post('/introspect', { schema }, async (request, reply) => {
    const credentials = presentedCredentials(request);
    const { token } = request.body;
    const introspect = token && isRefreshTokenFormat(token) ? introspectRefreshToken : introspectAccessToken;
    const answer = await introspect(request, credentials, token ?? '');
    // Checked after client authentication, as on the other client endpoints.
    if (!token) throw new InvalidRequest('token is required');
    return sendJsonText(reply, answer);
  });
}
