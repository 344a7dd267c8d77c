import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { csrfTokenMatches } from '../agent-sign-in/browser-binding.js';
import { complete, deny, loadBrowserSignIn, requestIdSchema } from '../agent-sign-in/sign-in.js';
import { InvalidRequest } from '../errors.js';
import { decision } from '../shapes/enums.js';
import { htmlPage, noBody, UNAVAILABLE } from './responses.js';

const bodySchema = z.object({
  request_id: requestIdSchema,
  csrf_token: z.string().min(1).max(200),
  decision,
});

const schema = {
  tags: ['browser'],
  description: "The Approve and Deny buttons of the approval page (REQUIRE_APPROVAL=true): a form post with the page's csrf_token.",
  consumes: ['application/x-www-form-urlencoded'],
  body: bodySchema,
  response: {
    303: noBody('To the redirect_uri: with code, state and iss on approve; with error=access_denied, state and iss on deny'),
    400: htmlPage('Error page: invalid_request (not waiting for approval, bad form token, another browser), request_expired or access_denied'),
    404: htmlPage('Error page: not_found, no such authorization request'),
    503: htmlPage(`Error page: ${UNAVAILABLE}`),
  },
};

/** POST /authorize/decision: the Approve / Deny buttons of the approval page (REQUIRE_APPROVAL). */
export default async function authorizeDecisionRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { config } = app.services;

  app.post('/authorize/decision', { schema, config: { html: true } }, async (request, reply) => {
    const { request_id: requestId, csrf_token: token, decision } = request.body;
    const context = { log: request.log };
    // An approval posted again after its answer was lost: complete() replaces the undelivered code.
    const approve = decision === 'approve';
    const { details, secret } = await loadBrowserSignIn(app.services, requestId, request.bindingSecret(requestId), context, approve);
    if (!config.requireApproval || !(details.status === 'authenticated' || (approve && details.status === 'completed'))) {
      throw new InvalidRequest('this sign-in is not waiting for approval');
    }
    if (!csrfTokenMatches(secret, requestId, token)) throw new InvalidRequest('the form token is invalid; reload the page');

    // 303: the browser follows with a GET, never re-posting the form to the website (RFC 9700 4.12).
    const decide = approve ? complete : deny;
    const location = await decide(app.services, { requestId, secret }, context);
    return reply.unbindBrowser(requestId).redirect(location, 303);
  });
}
