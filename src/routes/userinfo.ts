import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { checkPresentation, invalidDpopToken, type PresentedToken, presentedToken } from '../dpop/resource.js';
import { InvalidRequest, InvalidToken } from '../errors.js';
import { scopeGrantsEmail } from '../oauth/scopes.js';
import { noStore } from '../plugins/no-store.js';
import { liveGrantOf } from '../tokens/live-access-token.js';
import { BODY_REFUSED, errorResponses, serializeAsBuilt, UNAVAILABLE } from './responses.js';

const response = {
  200: z.object({ sub: z.string().describe('the agent id'), email: z.string().optional() }),
  ...errorResponses({
    401:
      'invalid_request: missing or invalid access token (WWW-Authenticate: Bearer, with error="invalid_token" when a token came and ' +
      'failed; WWW-Authenticate: DPoP for a DPoP-bound token or under the DPoP scheme); invalid_dpop_proof or use_dpop_nonce ' +
      '(RFC 9449 §7.1, §9: WWW-Authenticate: DPoP, and DPoP-Nonce)',
    503: UNAVAILABLE,
  }),
};
const description = "The agent behind an access token (sub), and the user's email when the granted scope holds email, openid or profile.";

const getSchema = {
  tags: ['oauth'],
  description: `${description} The token goes in the Authorization header: "Bearer <token>", or "DPoP <token>" with a DPoP proof (RFC 9449 §7) for a DPoP-bound token.`,
  security: [{ bearerToken: [] }],
  response,
};

// A form body may carry the token instead of the header (RFC 6750 §2.2); other fields are ignored.
const postBody = z.looseObject({ access_token: z.string().optional() }).nullish();
const postSchema = {
  tags: ['oauth'],
  description:
    `${description} The same as GET (OpenID Connect Core §5.3.1): the token goes in the Authorization header or, ` +
    'with a form body, in its access_token field (RFC 6750 §2.2), not both.',
  security: [{ bearerToken: [] }, {}] as { [scheme: string]: string[] }[],
  consumes: ['application/x-www-form-urlencoded'],
  body: postBody,
  response: {
    ...response,
    ...errorResponses({ 400: 'invalid_request: the token came both in the header and in the body', ...BODY_REFUSED }),
  },
};

/** GET and POST /userinfo: the agent id, and the user's email (as it is now) when the scope shares it. */
export default async function userinfoRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.addHook('onRequest', noStore);

  async function userinfo(request: FastifyRequest, reply: FastifyReply, bodyToken?: string) {
    const { authorization } = request.headers;
    const presented: PresentedToken | undefined =
      presentedToken(authorization) ?? (bodyToken === undefined ? undefined : { scheme: 'Bearer', token: bodyToken });
    const refused = () =>
      presented?.scheme === 'DPoP'
        ? invalidDpopToken('invalid_request')
        : // Another scheme, or no header at all, presents no bearer token (RFC 6750 §3.1). The body's code
          // is invalid_request here, as docs/protocol.md fixes for /userinfo; the challenge says invalid_token.
          new InvalidToken(/^Bearer /i.test(authorization ?? '') || bodyToken !== undefined, 'invalid_request');
    const verified = presented && (await app.services.verifiedTokens.verifyAny(presented.token));
    if (!verified) throw refused();
    const { claims } = verified;
    const { dpop } = app.services;
    const proofRequest = { method: request.method, path: '/userinfo', accessToken: presented.token };
    // The proof before the grant: a request with a bad one costs no read of the store.
    const proof = await checkPresentation(dpop, presented, claims.cnf?.jkt, {
      ...proofRequest,
      proof: request.headers.dpop,
      tokenError: 'invalid_request',
    });
    const grant = await liveGrantOf(app.services, claims);
    if (!grant) throw refused();
    if (proof) {
      reply.header('dpop-nonce', dpop.nonce());
      if (grant.dpop_nonce_required) dpop.demandNonce(proof, proofRequest);
    }
    const { sub, scope } = claims;
    return scopeGrantsEmail(scope) ? { sub, email: grant.email } : { sub };
  }

  app.get('/userinfo', { schema: getSchema, serializerCompiler: serializeAsBuilt }, async (request, reply) => userinfo(request, reply));
  app.post('/userinfo', { schema: postSchema, serializerCompiler: serializeAsBuilt }, async (request, reply) => {
    const bodyToken = request.body?.access_token;
    // RFC 6750 §2: one method per request.
    if (bodyToken !== undefined && request.headers.authorization !== undefined) {
      throw new InvalidRequest('send the access token in the Authorization header or in the body, not both');
    }
    return userinfo(request, reply, bodyToken);
  });
}
