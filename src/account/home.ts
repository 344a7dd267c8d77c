import type { FastifyInstance } from 'fastify';
import { renderAccount } from './render.js';

/** GET /account: the sign-in form, or the signed-in owner's portal. */
export default async function homePage(app: FastifyInstance) {
  const { store } = app.services;
  app.get(
    '/account',
    {
      schema: { hide: true },
      config: { html: true },
    },
    async (request, reply) => {
      if (!request.owner) return renderAccount(request, reply, 'sign-in', { title: 'Sign in' });
      const settings = await store.owners.settings(request.owner.user_id);
      const passkeys = await store.passkeys.count(request.owner.user_id);
      return renderAccount(request, reply, 'home', { title: 'Your account', settings, passkeys });
    },
  );
}
