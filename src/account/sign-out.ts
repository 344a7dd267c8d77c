import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { Forbidden } from '../errors.js';
import { signOut } from '../owner-flows/sign-in.js';
import { formTokenMatches, sessionCookie } from '../owners/sessions.js';
import { FORM_OR_JSON, noBody } from '../routes/responses.js';
import { isBrowserForm, refuseForeignOrigin, signedInOwner } from './guards.js';
import { OWNER_API_ERRORS } from './responses.js';

/**
 * POST /account/sign-out: ends the session (with `everywhere`, every session of the owner) in the
 * store, so on every instance at once. From the portal it is a form with the session's form token
 * (303 back to /account); from a script, JSON (204).
 */
export default async function signOutRoute(fastify: FastifyInstance, options: { issuerOrigin: string }) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { config } = app.services;
  const cookie = sessionCookie(config);

  app.post(
    '/account/sign-out',
    {
      schema: {
        tags: ['owner'],
        description: 'Ends the owner session on every instance; `everywhere`: every session of the owner, on every device.',
        consumes: FORM_OR_JSON,
        body: z.object({ everywhere: z.union([z.boolean(), z.literal('1')]).optional(), _csrf: z.string().max(200).optional() }),
        response: { 204: noBody('Signed out (JSON)'), 303: noBody('Signed out (the portal’s form): back to /account'), ...OWNER_API_ERRORS },
      },
      config: { html: true, formOrJson: true },
    },
    async (request, reply) => {
      const form = isBrowserForm(request);
      if (form && !request.owner) return reply.redirect('/account', 303);
      const owner = signedInOwner(request);
      refuseForeignOrigin(request, options.issuerOrigin);
      if (form ? !formTokenMatches(owner.secret, request.body._csrf) : !String(request.headers['content-type']).startsWith('application/json')) {
        throw new Forbidden('sign out from the portal’s button, or as JSON');
      }
      await signOut(app.services, owner, Boolean(request.body.everywhere), { log: request.log });
      reply.clearCookie(cookie.name, cookie.attributes);
      return form ? reply.redirect('/account', 303) : reply.code(204).send(null);
    },
  );
}
