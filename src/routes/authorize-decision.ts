import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { logAudit } from '../audit.js';
import { InvalidRequest } from '../errors.js';
import { csrfTokenMatches } from '../oauth/browser-binding.js';
import { loadBrowserRequest } from '../oauth/browser-request.js';
import { completeRequest } from '../oauth/complete-request.js';
import { redirectToClient } from '../oauth/redirect.js';
import { htmlPage, noBody, UNAVAILABLE } from '../openapi.js';
import { requestIdSchema } from './authorize-complete.js';

const bodySchema = z.object({
  request_id: requestIdSchema,
  csrf_token: z.string().min(1).max(200),
  decision: z.enum(['approve', 'deny']),
});

const schema = {
  tags: ['browser'],
  description: 'The Approve and Deny buttons of the approval page (REQUIRE_APPROVAL=true): a form post with the page\'s csrf_token.',
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
  const { config, store } = app.services;

  app.post('/authorize/decision', { schema, config: { html: true } }, async (request, reply) => {
    const { request_id: requestId, csrf_token: token, decision } = request.body;
    const { details, secret, browserHash } = await loadBrowserRequest(store, request, requestId);
    if (!config.requireApproval || details.status !== 'authenticated') {
      throw new InvalidRequest('this sign-in is not waiting for approval');
    }
    if (!csrfTokenMatches(secret, requestId, token)) throw new InvalidRequest('the form token is invalid; reload the page');

    // 303: the browser follows with a GET, never re-posting the form to the website (RFC 9700 4.12).
    if (decision === 'approve') return reply.redirect(await completeRequest(app.services, request.log, requestId, browserHash), 303);
    const denied = await store.requests.deny(requestId, browserHash);
    if (!denied) throw new InvalidRequest('this sign-in can no longer be answered; start again from the website');
    app.services.metrics.signIns.inc({ stage: 'denied' });
    logAudit(request.log, 'denied', { request_id: requestId, client_id: denied.client_id, agent_id: denied.agent_id, model: denied.model });
    return reply.redirect(
      redirectToClient(denied.redirect_uri, {
        error: 'access_denied',
        error_description: 'the user denied the sign-in',
        state: denied.state,
        iss: config.issuer,
      }),
      303,
    );
  });
}
