import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { registerClient, registrationRequest, registrationResponse } from '../clients/registration.js';
import { Forbidden } from '../errors.js';
import { noStoreWithPragma } from '../plugins/no-store.js';
import { byAddress } from '../plugins/rate-limit.js';
import { BODY_REFUSED, errorResponses, RATE_LIMITED, UNAVAILABLE } from './responses.js';

const schema = {
  tags: ['oauth'],
  description:
    'Dynamic client registration (RFC 7591) for MCP clients: a public client (token_endpoint_auth_method "none", PKCE ' +
    'always) with its redirect_uris (https, or http on loopback, where any port matches, RFC 8252 §7.3). Answers the ' +
    'client_id and the metadata as registered. Off with DYNAMIC_REGISTRATION=off; limited per address; a registration ' +
    'that starts no sign-in is purged after DYNAMIC_REGISTRATION_UNUSED_TTL_SECONDS.',
  body: registrationRequest,
  response: {
    201: registrationResponse,
    ...errorResponses({
      400: 'invalid_redirect_uri or invalid_client_metadata (RFC 7591 §3.2.2)',
      403: 'forbidden: dynamic registration is off here',
      ...BODY_REFUSED,
      429: RATE_LIMITED,
      503: UNAVAILABLE,
    }),
  },
};

/** POST /register (RFC 7591 §3). */
export default async function registerRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { config } = app.services;
  app.addHook('onRequest', noStoreWithPragma);
  const perIp = app.limiter('register-ip', config.rateLimits.registerPerIp, byAddress);

  app.post('/register', { schema, onRequest: perIp }, async (request, reply) => {
    if (!config.dynamicRegistration.open) throw new Forbidden('dynamic client registration is off here; use a Client ID Metadata Document');
    return reply.code(201).send(await registerClient(app.services, request.body));
  });
}
