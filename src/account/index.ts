import fastifyCookie from '@fastify/cookie';
import type { FastifyError, FastifyInstance } from 'fastify';
import type { StartedSession } from '../owner-flows/sign-in.js';
import { currentOwner, ownerSessionCookie, sessionCookie } from '../owners/sessions.js';
import { emptyJsonIsEmptyObject } from '../plugins/empty-json.js';
import { sendError, toOAuthError } from '../plugins/error-handler.js';
import { routeLabel } from '../plugins/metrics.js';
import { requireJson } from '../shapes/json-only.js';
import agentKeyRoutes from './agent-keys.js';
import agentPages from './agent-pages.js';
import agentRoutes from './agents.js';
import approvalRoutes from './approvals.js';
import emailLinkRoutes from './email-link.js';
import { guardProtection } from './fresh.js';
import { isBrowserForm, refuseForeignOrigin, signedInOwner } from './guards.js';
import historyPages, { historyApi } from './history.js';
import homePage from './home.js';
import meRoutes from './me.js';
import passkeySignInRoutes from './passkey-sign-in.js';
import passkeyRoutes from './passkeys.js';
import portalPages from './portal-pages.js';
import reauthenticateRoutes from './reauthenticate.js';
import { renderAccountError } from './render.js';
import signOutRoute from './sign-out.js';

/**
 * Owners on the public listener: the portal's pages at /account and the JSON API under
 * /account/api/ (docs/protocol.md, "Owners"). Every request here reads the session cookie; the API
 * answers 401 login_required without a live session, and takes a state change only as JSON
 * (which no HTML form can send) from this server's origin (CSRF). Pages and API answers are never cached.
 */
export default async function accountPlugin(app: FastifyInstance) {
  const { config, metrics } = app.services;
  const issuerOrigin = new URL(config.issuer).origin;
  const cookieName = sessionCookie(config).name;
  await app.register(fastifyCookie);
  app.decorateRequest('owner', null);
  app.decorateReply('ownerSession', function (started: StartedSession) {
    return this.setCookie(...ownerSessionCookie(config, started.sessionSecret));
  });
  app.addHook('onRequest', async (request, reply) => {
    reply.header('cache-control', 'no-store');
    const secret = request.cookies[cookieName];
    const session = await currentOwner(app.services, secret);
    if (session) request.owner = { ...session, secret: secret! };
  });

  emptyJsonIsEmptyObject(app);
  // Pages and the portal's forms fail with a page of the portal; the API with JSON.
  app.setErrorHandler((err: FastifyError, request, reply) => {
    const error = toOAuthError(err, request);
    const { html, formOrJson } = request.routeOptions.config ?? {};
    if (!html || (formOrJson && !isBrowserForm(request))) return sendError(metrics.failures, error, request, reply, false);
    metrics.failures.inc({ error: error.error, route: routeLabel(request) });
    return renderAccountError(request, reply, error);
  });

  await app.register(emailLinkRoutes, { issuerOrigin });
  await app.register(homePage);
  await app.register(signOutRoute, { issuerOrigin });
  await app.register(passkeySignInRoutes, { issuerOrigin });
  await app.register(portalPages);
  await app.register(agentPages);
  await app.register(historyPages);

  await app.register(async (api) => {
    api.addHook('onRequest', async (request) => {
      signedInOwner(request);
      if (request.method === 'GET' || request.method === 'HEAD') return;
      requireJson(request);
      refuseForeignOrigin(request, issuerOrigin);
    });
    guardProtection(api);
    await api.register(meRoutes);
    await api.register(agentRoutes);
    await api.register(agentKeyRoutes);
    await api.register(passkeyRoutes);
    await api.register(reauthenticateRoutes);
    await api.register(approvalRoutes);
    await api.register(historyApi);
  });
}
