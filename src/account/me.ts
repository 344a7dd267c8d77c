import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { atLeastOne } from '../admin/schemas.js';
import { NotFound } from '../errors.js';
import { BODY_REFUSED, errorResponses, UNAVAILABLE } from '../routes/responses.js';
import { APPROVAL_POLICIES } from '../store/owners.js';
import { signedInOwner } from './guards.js';
import { OWNER_API_ERRORS } from './responses.js';

const meView = z.object({
  email: z.string(),
  email_verified: z.boolean().describe('a sign-in link sent to this address has been used since it was set'),
  approval_policy: z.enum(APPROVAL_POLICIES),
  notify_new_website: z.boolean(),
  passkeys: z.array(z.object({ id: z.string(), name: z.string().nullable(), created_at: z.date(), last_used_at: z.date().nullable() })),
});

const mePatch = atLeastOne(z.strictObject({ approval_policy: z.enum(APPROVAL_POLICIES).optional(), notify_new_website: z.boolean().optional() }));

/** GET and PATCH /account/api/me: the signed-in owner and their settings. */
export default async function meRoutes(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { store } = app.services;
  // The owner's row goes with the session (ON DELETE CASCADE), so it is there while the session is.
  const view = async (userId: string, settings: Awaited<ReturnType<typeof store.owners.settings>>) => {
    if (!settings) throw new NotFound('no such owner');
    return { ...settings, passkeys: await store.passkeys.list(userId) };
  };

  app.get(
    '/account/api/me',
    {
      schema: {
        tags: ['owner'],
        description: 'The signed-in owner: email, whether it is verified, settings, passkeys.',
        response: { 200: meView, ...OWNER_API_ERRORS },
      },
    },
    async (request) => {
      const { user_id } = signedInOwner(request);
      return view(user_id, await store.owners.settings(user_id));
    },
  );

  app.patch(
    '/account/api/me',
    {
      schema: {
        tags: ['owner'],
        description: 'Changes the owner’s settings: the approval policy of their agents’ sign-ins, and mail about new websites.',
        body: mePatch,
        response: {
          200: meView,
          ...OWNER_API_ERRORS,
          ...errorResponses({ 400: 'invalid_request: a field is unknown or has a value not allowed', ...BODY_REFUSED, 503: UNAVAILABLE }),
        },
      },
    },
    async (request) => {
      const { user_id: userId } = signedInOwner(request);
      const settings = await store.owners.updateSettings(userId, request.body);
      await store.auditLog.recordAction({ actor: 'owner', event: 'owner_settings_changed', userId, detail: request.body });
      return view(userId, settings);
    },
  );
}
