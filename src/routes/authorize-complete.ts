import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { csrfToken } from '../agent-sign-in/browser-binding.js';
import { complete, loadBrowserSignIn, requestIdSchema, tryComplete } from '../agent-sign-in/sign-in.js';
import { renderSignInPage } from '../pages/sign-in-pages.js';
import { htmlPage, noBody, UNAVAILABLE } from './responses.js';

const schema = {
  tags: ['browser'],
  description:
    'Where the sign-in page sends the browser once the agent has authenticated; needs the cookie set by /authorize. ' +
    'Redirects to the website with the code, or shows the waiting page while the agent has yet to authenticate or its ' +
    'owner has yet to approve (no code is issued then), or the approval page when REQUIRE_APPROVAL is on.',
  querystring: z.object({ request_id: requestIdSchema }),
  response: {
    200: htmlPage("The waiting page (for the agent, or for its owner's approval), or the approval page"),
    302: noBody('To the redirect_uri with code, state and iss (RFC 9207)'),
    400: htmlPage('Error page: invalid_request (another browser, or already completed), request_expired or access_denied'),
    404: htmlPage('Error page: not_found, no such authorization request'),
    503: htmlPage(`Error page: ${UNAVAILABLE}`),
  },
};

/**
 * GET /authorize/complete: where the page sends the browser once the agent has authenticated.
 * Still pending: the waiting page again (the no-JavaScript refresh lands here); waiting for the
 * owner's approval: the page that says so. Authenticated: the code goes to the website, or, with
 * REQUIRE_APPROVAL, the approval page is shown first.
 */
export default async function authorizeCompleteRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { config } = app.services;

  app.get('/authorize/complete', { schema, config: { html: true } }, async (request, reply) => {
    const requestId = request.query.request_id;
    // The usual visit, without approval, is one statement: the guarded completion itself. The
    // request is read only when that does not apply, to show the right page or error.
    const context = { log: request.log };
    const presented = request.bindingSecret(requestId);
    if (!config.requireApproval && presented) {
      const location = await tryComplete(app.services, { requestId, secret: presented }, context);
      if (location) return reply.unbindBrowser(requestId).redirect(location, 302);
    }
    const { details, secret } = await loadBrowserSignIn(app.services, requestId, presented, context);
    const page = {
      requestId: details.id,
      clientName: details.client_name,
      redirectUri: details.redirect_uri,
      scope: details.scope,
      expiresAt: details.expires_at,
    };
    if (details.status === 'pending') return renderSignInPage(reply, 'waiting', page);
    if (details.approval === 'pending') {
      const owner = { email: details.email!, agentName: details.agent_name, matchCode: details.match_code! };
      return renderSignInPage(reply, 'owner-approval', { ...page, owner });
    }
    if (config.requireApproval) {
      return renderSignInPage(reply, 'approval', {
        ...page,
        approval: {
          agentId: details.agent_id!,
          agentName: details.agent_name,
          model: details.model!,
          email: details.email!,
          csrfToken: csrfToken(secret, details.id),
        },
      });
    }
    const location = await complete(app.services, { requestId, secret }, context);
    return reply.unbindBrowser(requestId).redirect(location, 302);
  });
}
