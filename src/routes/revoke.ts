import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { presentedTokenBody } from '../oauth/client-credentials.js';
import { clientCall, clientEndpoints } from '../plugins/client-endpoints.js';
import { noStore } from '../plugins/no-store.js';
import { revokeToken } from '../tokens/revocation.js';
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
 */
export default async function revokeRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.addHook('onRequest', noStore);
  await app.register(clientEndpoints);

  app.post('/revoke', { schema }, async (request, reply) => {
    await revokeToken(app.services, clientCall(request), request.body.token, { log: request.log });
    return reply.code(200).send({});
  });
}
