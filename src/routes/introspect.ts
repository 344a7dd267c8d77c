import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { presentedTokenBody } from '../oauth/client-credentials.js';
import { clientCall, clientEndpoints } from '../plugins/client-endpoints.js';
import { noStore } from '../plugins/no-store.js';
import { introspect, introspectionResponse } from '../tokens/introspection.js';
import { CLIENT_AUTH, FORM_OR_JSON, sendJsonText, TOKEN_OPERATION_ERRORS } from './responses.js';

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
  await app.register(clientEndpoints);

  app.post('/introspect', { schema }, async (request, reply) =>
    sendJsonText(reply, await introspect(app.services, clientCall(request), request.body.token)),
  );
}
