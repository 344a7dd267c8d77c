import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { changeSettings, ownerView } from '../owner-flows/settings.js';
import { requestEmailChange } from '../owners/email-link.js';
import { settingsWeakening } from '../owners/protection.js';
import { byAddress } from '../plugins/rate-limit.js';
import { BODY_REFUSED, errorResponses, RATE_LIMITED, UNAVAILABLE } from '../routes/responses.js';
import { atLeastOne } from '../shapes/bodies.js';
import { passkeyView } from '../shapes/views.js';
import { APPROVAL_POLICIES } from '../store/owners.js';
import { FRESH_REQUIRED } from './fresh.js';
import { signedInOwner } from './guards.js';
import { OWNER_API_ERRORS } from './responses.js';

const meView = z.object({
  email: z.string(),
  email_verified: z.boolean().describe('a sign-in link sent to this address has been used since it was set'),
  approval_policy: z.enum(APPROVAL_POLICIES),
  notify_new_website: z.boolean(),
  passkeys: z.array(passkeyView),
});

const mePatch = atLeastOne(z.strictObject({ approval_policy: z.enum(APPROVAL_POLICIES).optional(), notify_new_website: z.boolean().optional() }));

/** GET and PATCH /account/api/me: the signed-in owner and their settings; POST …/me/email moves the account to another address. */
export default async function meRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();

  app.get(
    '/account/api/me',
    {
      schema: {
        tags: ['owner'],
        description: 'The signed-in owner: email, whether it is verified, settings, passkeys.',
        response: { 200: meView, ...OWNER_API_ERRORS },
      },
    },
    async (request) => ownerView(app.services, signedInOwner(request).user_id),
  );

  app.patch(
    '/account/api/me',
    {
      schema: {
        tags: ['owner'],
        description:
          'Changes the owner’s settings: the approval policy of their agents’ sign-ins, and mail about new websites. ' +
          'Lowering the policy (always > new_website > never) or turning the mail off needs a fresh session, and is mailed to the owner.',
        body: mePatch,
        response: {
          200: meView,
          ...OWNER_API_ERRORS,
          ...errorResponses({ 400: 'invalid_request: a field is unknown or has a value not allowed', ...BODY_REFUSED, 503: UNAVAILABLE }),
          ...FRESH_REQUIRED,
        },
      },
      config: { requireFresh: (request) => settingsWeakening(app.services, signedInOwner(request).user_id, request.body) },
    },
    async (request) => changeSettings(app.services, signedInOwner(request).user_id, request.body, { log: request.log }),
  );

  // Shares the budget per client address of asking for sign-in links: each call mails a link.
  const perAddress = app.limiter('email-link-ip', app.services.config.rateLimits.emailLinkPerIp, byAddress);
  app.post(
    '/account/api/me/email',
    {
      schema: {
        tags: ['owner'],
        description:
          'Moves the account to another email address once the link mailed there is used (then verified); until then nothing ' +
          'changes. Needs a fresh session (OWNER_FRESH_SECONDS). The answer is the same whether or not another account has the address.',
        body: z.strictObject({ email: z.email().max(320) }),
        response: {
          202: z.object({}).describe('a link is on its way to the new address'),
          ...OWNER_API_ERRORS,
          ...errorResponses({
            400: 'invalid_request: not an email address',
            403: 'fresh_authentication_required: the session’s last sign-in or passkey confirmation is older than OWNER_FRESH_SECONDS (or forbidden: another origin)',
            ...BODY_REFUSED,
            429: RATE_LIMITED,
            503: UNAVAILABLE,
          }),
        },
      },
      onRequest: perAddress,
    },
    async (request, reply) => {
      await requestEmailChange(app.services, signedInOwner(request), request.body.email, { log: request.log });
      return reply.code(202).send({});
    },
  );
}
