import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { InvalidRequest, NotFound } from '../errors.js';
import { PasskeyRefused, register, registrationOptions } from '../passkeys/webauthn.js';
import { displayText, idText } from '../protocol/text.js';
import { BODY_REFUSED, errorResponses, noBody, UNAVAILABLE } from '../routes/responses.js';
import { signedInOwner } from './guards.js';
import { OWNER_API_ERRORS } from './responses.js';
import { optionsJson, registrationCredential } from './webauthn-schemas.js';

const passkeyView = z.object({ id: z.string(), name: z.string(), created_at: z.date(), last_used_at: z.date().nullable() });
const name = displayText(100).describe('a name the owner tells their passkeys apart by');
const params = z.object({ id: idText() });
const failures = errorResponses({ 400: 'invalid_request: malformed, or the passkey could not be verified', ...BODY_REFUSED, 503: UNAVAILABLE });

/**
 * The owner's passkeys (docs/protocol.md, "Passkeys"): registration options, then the
 * authenticator's answer to them, then names and deletion. Inside the API scope: a session and a
 * same-origin JSON call are required already.
 */
export default async function passkeyRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { store } = app.services;

  app.post(
    '/account/api/passkeys/registration-options',
    {
      schema: {
        tags: ['owner'],
        description:
          'PublicKeyCredentialCreationOptionsJSON for a new passkey: RP id the issuer’s host, user verification required, attestation none.',
        response: { 200: optionsJson, ...OWNER_API_ERRORS, ...failures },
      },
    },
    async (request) => {
      const owner = signedInOwner(request);
      return registrationOptions(app.services, owner);
    },
  );

  app.post(
    '/account/api/passkeys',
    {
      schema: {
        tags: ['owner'],
        description: 'Registers a passkey from the authenticator’s answer to the latest registration options (each used once, for 5 minutes).',
        body: z.object({ name: name.optional(), credential: registrationCredential }),
        response: { 201: passkeyView, ...OWNER_API_ERRORS, ...failures },
      },
    },
    async (request, reply) => {
      const owner = signedInOwner(request);
      const { credential } = request.body;
      try {
        const passkey = await register(app.services, owner.user_id, credential, request.body.name ?? 'Passkey');
        request.log.info({ passkey_id: passkey.id }, 'owner registered a passkey');
        return reply.code(201).send(passkey);
      } catch (error) {
        if (error instanceof PasskeyRefused) throw new InvalidRequest(error.message);
        throw error;
      }
    },
  );

  app.patch(
    '/account/api/passkeys/:id',
    {
      schema: {
        tags: ['owner'],
        description: 'Renames a passkey, to tell it from the others.',
        params,
        body: z.strictObject({ name }),
        response: { 200: passkeyView, ...OWNER_API_ERRORS, ...failures, ...errorResponses({ 404: 'not_found: no such passkey of yours' }) },
      },
    },
    async (request) => {
      const renamed = await store.passkeys.rename(request.params.id, signedInOwner(request).user_id, request.body.name);
      if (!renamed) throw new NotFound('no such passkey');
      return renamed;
    },
  );

  app.delete(
    '/account/api/passkeys/:id',
    {
      schema: {
        tags: ['owner'],
        description: 'Deletes a passkey: it signs in and approves no more.',
        params,
        response: {
          204: noBody('Deleted'),
          ...OWNER_API_ERRORS,
          ...errorResponses({ 404: 'not_found: no such passkey of yours', 503: UNAVAILABLE }),
        },
      },
    },
    async (request, reply) => {
      if (!(await store.passkeys.delete(request.params.id, signedInOwner(request).user_id))) throw new NotFound('no such passkey');
      request.log.info({ passkey_id: request.params.id }, 'owner deleted a passkey');
      return reply.code(204).send(null);
    },
  );
}
