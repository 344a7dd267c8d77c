import fastifyCookie from '@fastify/cookie';
import fastifyFormbody from '@fastify/formbody';
import type { FastifyError, FastifyInstance } from 'fastify';
import { safeEqual, sha256 } from '../crypto/secrets.js';
import { FormRejected } from '../errors.js';
import { toOAuthError } from '../plugins/error-handler.js';
import htmlPages from '../plugins/html-pages.js';
import agentPages from './agents.js';
import auditPages from './audit-log.js';
import homePage from './home.js';
import loginPages from './login.js';
import { FormProblem, renderConsole } from './render.js';
import resourcePages from './resources.js';
import { type ConsoleKeys, consoleKeys } from './session.js';
import userPages from './users.js';
import websitePages from './websites.js';

declare module 'fastify' {
  interface FastifyInstance {
    consoleKeys: ConsoleKeys;
  }
  interface FastifyRequest {
    /** The operator's session value; empty on the login form and the assets when there is none. */
    consoleSession: string;
  }
  interface FastifyContextConfig {
    /** Console routes open without a session: the login form and the assets. */
    consolePublic?: boolean;
  }
}

/**
 * The operators' web console, on the admin listener under /console (docs/operations.md). Signing in
 * takes the admin token; every page is server-rendered and every action goes through the same
 * functions and store calls as the admin API.
 */
export default async function consolePlugin(app: FastifyInstance, options: { adminTokenDigest: string }) {
  app.decorate('consoleKeys', consoleKeys(options.adminTokenDigest));
  app.decorateRequest('consoleSession', '');
  await app.register(fastifyCookie);
  await app.register(fastifyFormbody);
  await app.register(htmlPages, { formActionSelf: true });

  // Anything but the login form and the assets needs a session; without one, the login form.
  app.addHook('onRequest', async (request, reply) => {
    // The shared script and the logo (src/plugins/html-pages.ts) are the same for everyone.
    if (request.routeOptions.url?.startsWith('/console/assets/')) return;
    const session = app.consoleKeys.session(request);
    // A genuine, unexpired cookie still counts for nothing once its operator signed out (on any instance).
    if (session && !(await app.services.store.consoleSessions.isSignedOut(sha256(session)))) request.consoleSession = session;
    else if (!request.routeOptions.config?.consolePublic) return reply.redirect('/console/sign-in', 303);
  });
  // Every form carries the session's token (src/console/session.ts); a post without it changes nothing.
  app.addHook('preHandler', async (request) => {
    if (request.method !== 'POST' || request.routeOptions.config?.consolePublic) return;
    const presented = (request.body as Record<string, unknown> | undefined)?._csrf;
    if (typeof presented !== 'string' || !safeEqual(presented, app.consoleKeys.formToken(request.consoleSession))) {
      throw new FormRejected('the form has expired or did not come from this console; reload the page and try again');
    }
  });

  // A form that did not validate goes back to its page with the reason; anything else is a page of its own.
  app.setErrorHandler(async (err: FastifyError, request, reply) => {
    if (err instanceof FormProblem) {
      app.consoleKeys.setFlash(request, reply, { error: err.message });
      return reply.redirect(err.back, 303);
    }
    const error = toOAuthError(err, request);
    app.services.metrics.failures.inc({ error: error.error, route: 'console' });
    reply.code(error.statusCode).headers(error.headers);
    return renderConsole(request, reply, 'error', { title: 'Something went wrong', error });
  });
  app.setNotFoundHandler(async (request, reply) =>
    renderConsole(request, reply.code(404), 'error', {
      title: 'Not found',
      error: { error: 'not_found', description: 'there is no such page in the console' },
    }),
  );

  await app.register(loginPages);
  await app.register(homePage);
  await app.register(websitePages);
  await app.register(resourcePages);
  await app.register(agentPages);
  await app.register(userPages);
  await app.register(auditPages);
}
