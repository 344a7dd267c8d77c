import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { requestIdSchema } from '../agent-sign-in/sign-in.js';
import { redirectOrigin } from '../oauth/redirect.js';
import { approvalOptions, approve, deny } from '../owner-flows/approval.js';
import { BODY_REFUSED, errorResponses, UNAVAILABLE } from '../routes/responses.js';
import { decision } from '../shapes/enums.js';
import { signedInOwner } from './guards.js';
import { OWNER_API_ERRORS } from './responses.js';
import { assertionCredential, optionsJson } from './webauthn-schemas.js';

const approvalView = z.object({
  request_id: z.string(),
  match_code: z.string().describe('shown on the page where the sign-in waits, too'),
  agent_id: z.string(),
  agent_name: z.string().nullable(),
  model: z.string(),
  client_id: z.string(),
  client_name: z.string(),
  redirect_origin: z.string(),
  scope: z.string(),
  created_at: z.date(),
  expires_at: z.date(),
});

const params = z.object({ request_id: requestIdSchema });
const decisionErrors = errorResponses({
  400: 'invalid_request: not waiting for approval (declined already, or no approval asked); request_expired',
  403: 'fresh_authentication_required: approving needs a passkey assertion over this sign-in’s challenge, or an email-link sign-in within 5 minutes; forbidden: another origin',
  404: 'not_found: no sign-in of one of your agents has this id',
  ...BODY_REFUSED,
  503: UNAVAILABLE,
});

/**
 * The owner's approval of their agents' sign-ins (docs/protocol.md, "Owner approval"): the list
 * of those waiting, request options bound to one of them, and the decision. Inside the API scope.
 */
export default async function approvalRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { store } = app.services;

  app.get(
    '/account/api/approvals',
    {
      schema: {
        tags: ['owner'],
        description: 'The sign-ins of the owner’s agents that wait for the owner’s approval, oldest first.',
        response: { 200: z.object({ approvals: z.array(approvalView) }), ...OWNER_API_ERRORS },
      },
    },
    async (request) => {
      const pending = await store.approvals.pending(signedInOwner(request).user_id);
      return { approvals: pending.map(({ redirect_uri, ...approval }) => ({ ...approval, redirect_origin: redirectOrigin(redirect_uri) })) };
    },
  );

  app.post(
    '/account/api/approvals/:request_id/options',
    {
      schema: {
        tags: ['owner'],
        description: 'PublicKeyCredentialRequestOptionsJSON whose challenge is bound to this sign-in (used once, for 5 minutes).',
        params,
        response: { 200: optionsJson, ...OWNER_API_ERRORS, ...decisionErrors },
      },
    },
    async (request) => approvalOptions(app.services, request.params.request_id, signedInOwner(request).user_id),
  );

  app.post(
    '/account/api/approvals/:request_id',
    {
      schema: {
        tags: ['owner'],
        description:
          'Approves or declines a sign-in. Approving needs fresh user verification: with a passkey, `credential` (an assertion with UV ' +
          'over this sign-in’s challenge); without one, an email-link sign-in within the last 5 minutes. Both are idempotent.',
        params,
        body: z.object({ decision, credential: assertionCredential.optional() }),
        response: { 200: z.object({}), ...OWNER_API_ERRORS, ...decisionErrors },
      },
    },
    async (request) => {
      const owner = signedInOwner(request);
      const { request_id: requestId } = request.params;
      const context = { log: request.log };
      if (request.body.decision === 'approve') await approve(app.services, requestId, owner, request.body.credential, context);
      else await deny(app.services, requestId, owner, context);
      request.log.info({ request_id: requestId, decision: request.body.decision }, 'owner decided on a sign-in');
      return {};
    },
  );
}
