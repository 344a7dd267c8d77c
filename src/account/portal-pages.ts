import type { FastifyInstance } from 'fastify';
import { renderAccount } from './render.js';

/**
 * The portal's pages for passkeys and approvals (GET /account/passkeys, /account/approvals): the
 * page is rendered here, its buttons call the JSON API. Without a session, the sign-in page.
 */
export default async function portalPages(app: FastifyInstance) {
  const { store } = app.services;
  const options = { schema: { hide: true }, config: { html: true } };

  app.get('/account/passkeys', options, async (request, reply) => {
    if (!request.owner) return reply.redirect('/account', 303);
    const passkeys = await store.passkeys.list(request.owner.user_id);
    return renderAccount(request, reply, 'passkeys', { title: 'Your passkeys', passkeys });
  });

  app.get('/account/approvals', options, async (request, reply) => {
    if (!request.owner) return reply.redirect('/account', 303);
    const hasPasskey = (await store.passkeys.count(request.owner.user_id)) > 0;
    return renderAccount(request, reply, 'approvals', { title: 'Sign-ins waiting for you', hasPasskey });
  });
}
