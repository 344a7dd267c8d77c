import { fileURLToPath } from 'node:url';
import fastifyHelmet from '@fastify/helmet';
import helmet, { type HelmetOptions } from 'helmet';
import fastifyView from '@fastify/view';
import { Eta } from 'eta';
import type { FastifyInstance, RouteOptions } from 'fastify';
import fp from 'fastify-plugin';

const viewsDir = fileURLToPath(new URL('../../views', import.meta.url));

const common: HelmetOptions = {
  frameguard: { action: 'deny' },
  referrerPolicy: { policy: 'no-referrer' },
  crossOriginResourcePolicy: { policy: 'same-origin' },
};

// The JSON API's headers carry no nonce, so one helmet middleware, built once, serves them all
// (@fastify/helmet builds one per response, and draws two nonces for it).
const apiHeaders = helmet({ ...common, contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } } });

/** Pages (routes with `config.html`, and /docs) need per-response nonces; the JSON API does not. */
const isPageRoute = (route: RouteOptions) => Boolean(route.config?.html) || route.url.startsWith('/docs');

/**
 * Security headers for every response and eta templates for the browser pages. Scripts and
 * styles run only with the per-response nonce; nothing may frame us; no referrer leaks the query.
 */
export default fp(async function htmlPages(app: FastifyInstance) {
  // Before @fastify/helmet's own onRoute hook, which reads `helmet: false`.
  app.addHook('onRoute', (route) => {
    if (isPageRoute(route)) return;
    route.helmet = false;
    // First, so that an early answer (a 429 from a route's rate limit) has the headers too.
    route.onRequest = [
      (request, reply, done) => apiHeaders(request.raw, reply.raw, (err) => done(err as Error | undefined)),
      ...[route.onRequest ?? []].flat(),
    ];
  });
  await app.register(fastifyHelmet, {
    ...common,
    enableCSPNonces: true,
    contentSecurityPolicy: {
      useDefaults: false,
      directives: {
        defaultSrc: ["'none'"],
        scriptSrc: ["'self'"],
        styleSrc: ["'self'"],
        imgSrc: ["'self'", 'data:'],
        connectSrc: ["'self'"],
        baseUri: ["'none'"],
        frameAncestors: ["'none'"],
        // No form-action: Chrome applies it to the redirect that follows Approve, which goes to the website.
      },
    },
  });
  await app.register(fastifyView, {
    engine: { eta: new Eta({ views: viewsDir, cache: true }) },
    root: viewsDir,
  });
  // Pages carry request ids and one-time state: never cache them anywhere.
  app.addHook('onSend', async (_request, reply) => {
    if (String(reply.getHeader('content-type') ?? '').startsWith('text/html')) {
      reply.header('cache-control', 'no-store');
    }
  });
});
