import type { FastifyInstance } from 'fastify';
import { EMAIL_SCOPES, sharedInWords } from '../oauth/scopes.js';
import { POLICY_CHOICES } from '../owners/protection.js';
import { renderAccount } from './render.js';

/**
 * The portal's pages for passkeys, approvals and settings (GET /account/passkeys, /account/approvals,
 * /account/settings): the page is rendered here, its buttons call the JSON API. Without a session,
 * the sign-in page.
 */
export default async function portalPages(app: FastifyInstance) {
  const { store } = app.services;
  const options = { schema: { hide: true }, config: { html: true } };

  app.get('/account/passkeys', options, async (request, reply) => {
    if (!request.owner) return reply.redirect('/account', 303);
    const passkeys = await store.passkeys.list(request.owner.user_id);
    return renderAccount(request, reply, 'passkeys', { title: 'Your passkeys', nav: 'passkeys', passkeys });
  });

  app.get('/account/approvals', options, async (request, reply) => {
    if (!request.owner) return reply.redirect('/account', 303);
    const hasPasskey = (await store.passkeys.count(request.owner.user_id)) > 0;
    return renderAccount(request, reply, 'approvals', {
      title: 'Sign-ins waiting for you',
      nav: 'approvals',
      hasPasskey,
      emailScopes: EMAIL_SCOPES,
      sharesEmail: sharedInWords('email'),
      sharesId: sharedInWords(''),
    });
  });

  app.get('/account/settings', options, async (request, reply) => {
    if (!request.owner) return reply.redirect('/account', 303);
    const settings = await store.owners.settings(request.owner.user_id);
    return renderAccount(request, reply, 'settings', { title: 'Settings', nav: 'settings', settings, policies: POLICY_CHOICES });
  });
}
