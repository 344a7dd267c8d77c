import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { stepUp, stepUpOptions } from '../owner-flows/step-up.js';
import { BODY_REFUSED, errorResponses, noBody, UNAVAILABLE } from '../routes/responses.js';
import { signedInOwner } from './guards.js';
import { OWNER_API_ERRORS } from './responses.js';
import { assertionCredential, optionsJson } from './webauthn-schemas.js';

/**
 * The step-up (docs/protocol.md, "Fresh verification"): the owner confirms with a passkey that it
 * is them, and the session is fresh again for the changes that weaken their protection. Inside the
 * API scope: a session and a same-origin JSON call are required already.
 */
export default async function reauthenticateRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();

  app.post(
    '/account/api/reauthenticate/options',
    {
      schema: {
        tags: ['owner'],
        description:
          'PublicKeyCredentialRequestOptionsJSON for the owner’s passkeys (user verification required), the challenge bound to this session and used once, for 5 minutes.',
        response: {
          200: optionsJson,
          ...OWNER_API_ERRORS,
          ...errorResponses({
            400: 'invalid_request: the owner has no passkey (a new email-link sign-in makes the session fresh)',
            503: UNAVAILABLE,
          }),
        },
      },
    },
    async (request) => stepUpOptions(app.services, signedInOwner(request)),
  );

  app.post(
    '/account/api/reauthenticate',
    {
      schema: {
        tags: ['owner'],
        description: 'Makes the session fresh: `credential` is an assertion with user verification over this session’s latest options.',
        body: z.object({ credential: assertionCredential }),
        response: {
          204: noBody('The session is fresh'),
          ...OWNER_API_ERRORS,
          ...errorResponses({
            400: 'invalid_request: malformed',
            403: 'fresh_authentication_required: the passkey was not accepted (not yours, no user verification, a spent challenge or one of another session, a counter that did not move on); forbidden: another origin',
            ...BODY_REFUSED,
            503: UNAVAILABLE,
          }),
        },
      },
    },
    async (request, reply) => {
      await stepUp(app.services, signedInOwner(request), request.body.credential, { log: request.log });
      return reply.code(204).send(null);
    },
  );
}
