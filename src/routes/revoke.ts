import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { logAudit } from '../audit.js';
import { sha256 } from '../crypto/secrets.js';
import { InvalidRequest } from '../errors.js';
import { verifyAccessToken } from '../oauth/access-token.js';
import { omitEmptyParameters, presentedTokenBody } from '../oauth/client-auth.js';
import { isRefreshTokenFormat } from '../oauth/refresh-token-format.js';
import { clientAuthentication } from '../plugins/client-auth.js';
import { noStore } from '../plugins/no-store.js';
import { CLIENT_AUTH, FORM_OR_JSON, TOKEN_OPERATION_ERRORS } from './responses.js';

const schema = {
  tags: ['oauth'],
  description:
    "Revokes one of the client's access or refresh tokens (RFC 7009); a refresh token takes every token issued " +
    'with it along. The answer is the same whatever the token: 200 with an empty JSON object.',
  consumes: FORM_OR_JSON,
  security: CLIENT_AUTH,
  body: presentedTokenBody,
  response: {
    200: z.object({}).strict().describe('Revoked, or nothing to revoke'),
    ...TOKEN_OPERATION_ERRORS,
  },
};

/**
 * POST /revoke (RFC 7009): 200 with `{}` whatever the token, so the answer tells nothing. RFC 7009
 * §2.2 leaves the body to us; an empty JSON object, typed as JSON, is what client libraries parse
 * without complaint (simple-oauth2 fails on an empty body without a content type).
 * A client revokes only its own tokens; a refresh token takes its whole family with it.
 */
export default async function revokeRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.addHook('onRequest', noStore);
  await app.register(clientAuthentication);
  app.addHook('preValidation', omitEmptyParameters);

  app.post('/revoke', { schema }, async (request, reply) => {
    const { token } = request.body;
    if (!token) throw new InvalidRequest('token is required');
    const clientId = request.client.client_id;
    const { grants } = app.services.store;
    if (isRefreshTokenFormat(token)) {
      const revoked = await grants.revokeRefreshToken(sha256(token), clientId);
      if (revoked) logAudit(request.log, 'revoked', revoked);
    } else {
      // An expired or forged token needs no revoking; a live one is refused until it would expire.
      const claims = verifyAccessToken(app.services, token);
      if (claims?.client_id === clientId) {
        await grants.revokeAccessToken(claims.jti, new Date(claims.exp * 1000));
        logAudit(request.log, 'revoked', { client_id: clientId, agent_id: claims.sub, model: claims.model, reason: 'client_revocation' });
      }
    }
    return reply.code(200).send({});
  });
}
