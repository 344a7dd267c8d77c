import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { signInByPasskey } from '../owner-flows/sign-in.js';
import { assertionOptions } from '../passkeys/webauthn.js';
import { byAddress } from '../plugins/rate-limit.js';
import { BODY_REFUSED, errorResponses, RATE_LIMITED, UNAVAILABLE } from '../routes/responses.js';
import { requireJson } from '../shapes/json-only.js';
import { refuseForeignOrigin } from './guards.js';
import { assertionCredential, optionsJson } from './webauthn-schemas.js';

const failures = errorResponses({
  400: 'invalid_request: malformed',
  401: 'login_required: the passkey was not accepted (unknown, no user verification, spent or expired challenge, another origin, a counter that did not move on)',
  403: 'forbidden: from another origin',
  ...BODY_REFUSED,
  429: RATE_LIMITED,
  503: UNAVAILABLE,
});

/**
 * Signing in to /account with a passkey, no session needed (docs/protocol.md, "Passkeys"):
 * options for a discoverable credential, then the assertion, which starts a session.
 */
export default async function passkeySignInRoutes(fastify: FastifyInstance, options: { issuerOrigin: string }) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { config } = app.services;
  // Each call issues or spends a challenge row before anyone is known: budgeted per address.
  const perAddress = app.limiter('passkey-sign-in-ip', config.rateLimits.passkeySignInPerIp, byAddress);
  const jsonFromHere = async (request: Parameters<typeof refuseForeignOrigin>[0]) => {
    requireJson(request);
    refuseForeignOrigin(request, options.issuerOrigin);
  };

  app.post(
    '/account/passkey/options',
    {
      schema: {
        tags: ['owner'],
        description:
          'PublicKeyCredentialRequestOptionsJSON for signing in with any passkey registered here (discoverable, user verification required).',
        response: { 200: optionsJson, ...failures },
      },
      onRequest: [perAddress, jsonFromHere],
    },
    async () => assertionOptions(app.services, 'sign_in'),
  );

  app.post(
    '/account/passkey/sign-in',
    {
      schema: {
        tags: ['owner'],
        description: 'Signs in with a passkey’s assertion over the latest sign-in options: 200 with the owner session cookie.',
        body: z.object({ credential: assertionCredential }),
        response: { 200: z.object({}), ...failures },
      },
      onRequest: [perAddress, jsonFromHere],
    },
    async (request, reply) => {
      const started = await signInByPasskey(app.services, request.body.credential, request.owner?.hash, { log: request.log });
      return reply.ownerSession(started).send({});
    },
  );
}
