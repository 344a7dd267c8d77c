import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { InvalidToken } from '../errors.js';
import { liveAccessToken } from '../oauth/access-token.js';
import { noStore } from '../oauth/no-store.js';
import { scopeGrantsEmail } from '../oauth/scopes.js';
import { errorResponses, UNAVAILABLE } from '../openapi.js';

// RFC 6750 §2.1; the header is the only place we accept the token (not the query, not the body).
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

const schema = {
  tags: ['oauth'],
  description:
    'The agent behind an access token (sub), and the user\'s email when the granted scope holds email, openid or profile. ' +
    'The token goes in the Authorization header only.',
  security: [{ bearerToken: [] }],
  response: {
    200: z.object({ sub: z.string().describe('the agent id'), email: z.string().optional() }),
    ...errorResponses({
      401: 'invalid_request: missing or invalid access token (WWW-Authenticate: Bearer error="invalid_token")',
      503: UNAVAILABLE,
    }),
  },
};

/** GET /userinfo: the agent id, and the user's email (as it is now) when the scope shares it. */
export default async function userinfoRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.addHook('onRequest', noStore);

  app.get('/userinfo', { schema }, async (request) => {
    const token = BEARER.exec(request.headers.authorization ?? '')?.[1];
    const live = token === undefined ? undefined : await liveAccessToken(app.services, token);
    if (!live) throw new InvalidToken();
    const { sub, scope } = live.claims;
    return scopeGrantsEmail(scope) ? { sub, email: live.email } : { sub };
  });
}
