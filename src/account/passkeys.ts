import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { addPasskey, removePasskey, renamePasskey } from '../owner-flows/settings.js';
import { registrationOptions } from '../passkeys/webauthn.js';
import { displayText } from '../protocol/text.js';
import { BODY_REFUSED, errorResponses, noBody, UNAVAILABLE } from '../routes/responses.js';
import { idParams } from '../shapes/ids.js';
import { passkeyView } from '../shapes/views.js';
import { FRESH_REQUIRED } from './fresh.js';
import { signedInOwner } from './guards.js';
import { OWNER_API_ERRORS } from './responses.js';
import { optionsJson, registrationCredential } from './webauthn-schemas.js';

const name = displayText(100).describe('a name the owner tells their passkeys apart by');
const params = idParams;
const failures = errorResponses({ 400: 'invalid_request: malformed, or the passkey could not be verified', ...BODY_REFUSED, 503: UNAVAILABLE });

/**
 * The owner's passkeys (docs/protocol.md, "Passkeys"): registration options, then the
 * authenticator's answer to them, then names and deletion. Inside the API scope: a session and a
 * same-origin JSON call are required already. A passkey approves sign-ins, so adding or removing
 * one needs a fresh session (src/account/fresh.ts); each change is in the owner's history.
 */
export default async function passkeyRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();

  app.post(
    '/account/api/passkeys/registration-options',
    {
      schema: {
        tags: ['owner'],
        description:
          'PublicKeyCredentialCreationOptionsJSON for a new passkey: RP id the issuer’s host, user verification required, attestation none.',
        response: { 200: optionsJson, ...OWNER_API_ERRORS, ...failures, ...FRESH_REQUIRED },
      },
      config: { requireFresh: true },
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
        response: { 201: passkeyView, ...OWNER_API_ERRORS, ...failures, ...FRESH_REQUIRED },
      },
      config: { requireFresh: 'a passkey was added' },
    },
    async (request, reply) => {
      const { user_id: userId } = signedInOwner(request);
      const passkey = await addPasskey(app.services, userId, request.body.credential, request.body.name ?? 'Passkey', { log: request.log });
      request.protectionChange = `the passkey “${passkey.name}” was added`;
      return reply.code(201).send(passkey);
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
      return renamePasskey(app.services, signedInOwner(request).user_id, request.params.id, request.body.name);
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
          ...FRESH_REQUIRED,
        },
      },
      config: { requireFresh: 'a passkey was removed' },
    },
    async (request, reply) => {
      const name = await removePasskey(app.services, signedInOwner(request).user_id, request.params.id, { log: request.log });
      request.protectionChange = `the passkey “${name}” was removed`;
      return reply.code(204).send(null);
    },
  );
}
