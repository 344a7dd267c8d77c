import type { FastifyInstance } from 'fastify';
import { sha256 } from '../crypto/secrets.js';
import { ADMIN_FAILURES, byAddress } from '../plugins/rate-limit.js';
import { renderConsole } from './render.js';

/**
 * Operators log in to the console (the admin token, once per session) and out again. The URL says
 * sign-in, as people do; in the code a sign-in is an agent signing in to a website (src/README.md).
 */
export default async function loginPages(app: FastifyInstance) {
  const keys = app.consoleKeys;
  const failures = app.budget(ADMIN_FAILURES, app.services.config.rateLimits.adminFailuresPerIp, byAddress);

  app.get('/sign-in', { config: { html: true, consolePublic: true } }, async (request, reply) => {
    if (request.consoleSession) return reply.redirect('/console', 303);
    return renderConsole(request, reply, 'login', { title: 'Sign in', loginToken: keys.loginFormToken(request, reply) });
  });

  app.post('/sign-in', { config: { html: true, consolePublic: true } }, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const refuse = (status: number, message: string) =>
      renderConsole(request, reply.code(status), 'login', { title: 'Sign in', loginToken: keys.loginFormToken(request, reply), message });
    const refused = failures.refusal(request);
    if (refused) {
      reply.headers(refused.headers);
      return refuse(429, 'Too many failed sign-ins from your address. Wait a minute and try again.');
    }
    if (typeof body._csrf !== 'string' || !keys.loginFormTokenMatches(request, body._csrf)) {
      return refuse(403, 'The sign-in form expired. Try again.');
    }
    if (typeof body.token !== 'string' || !keys.isAdminToken(body.token)) {
      await failures.spend(request);
      request.log.info('console sign-in refused');
      return refuse(401, 'That is not the admin token.');
    }
    keys.startSession(request, reply);
    request.log.info('console sign-in');
    return reply.redirect('/console', 303);
  });

  app.post('/sign-out', { config: { html: true } }, async (request, reply) => {
    const session = request.consoleSession;
    await app.services.store.consoleSessions.signOut(sha256(session), keys.expiryOf(session));
    keys.endSession(reply);
    return reply.redirect('/console/sign-in', 303);
  });
}
