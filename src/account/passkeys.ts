import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { InvalidRequest, NotFound } from '../errors.js';
import { PasskeyRefused, register, registrationOptions } from '../passkeys/webauthn.js';
import { displayText, idText } from '../protocol/text.js';
import { BODY_REFUSED, errorResponses, noBody, UNAVAILABLE } from '../routes/responses.js';
import { FRESH_REQUIRED } from './fresh.js';
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
 * same-origin JSON call are required already. A passkey approves sign-ins, so adding or removing
 * one needs a fresh session (src/account/fresh.ts); each change is in the owner's history.
 */
export default async function passkeyRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { store } = app.services;
  const audit = (userId: string, event: 'passkey_added' | 'passkey_renamed' | 'passkey_removed', detail: Record<string, unknown>) =>
    store.auditLog.recordAction({ actor: 'owner', event, userId, detail });

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
      const owner = signedInOwner(request);
      const { credential } = request.body;
      try {
        const passkey = await register(app.services, owner.user_id, credential, request.body.name ?? 'Passkey');
        await audit(owner.user_id, 'passkey_added', { passkey_id: passkey.id, name: passkey.name });
        request.protectionChange = `the passkey “${passkey.name}” was added`;
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
      const { user_id: userId } = signedInOwner(request);
      const renamed = await store.passkeys.rename(request.params.id, userId, request.body.name);
      if (!renamed) throw new NotFound('no such passkey');
      await audit(userId, 'passkey_renamed', { passkey_id: renamed.id, name: renamed.name });
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
          ...FRESH_REQUIRED,
        },
      },
      config: { requireFresh: 'a passkey was removed' },
    },
    async (request, reply) => {
      const { user_id: userId } = signedInOwner(request);
      const name = await store.passkeys.delete(request.params.id, userId);
      if (name === undefined) throw new NotFound('no such passkey');
      await audit(userId, 'passkey_removed', { passkey_id: request.params.id, name });
      request.protectionChange = `the passkey “${name}” was removed`;
      request.log.info({ passkey_id: request.params.id }, 'owner deleted a passkey');
      return reply.code(204).send(null);
    },
  );
}
