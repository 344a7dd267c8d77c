import { fileURLToPath } from 'node:url';
import fastifyHelmet from '@fastify/helmet';
import fastifyView from '@fastify/view';
import { Eta } from 'eta';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

const viewsDir = fileURLToPath(new URL('../../views', import.meta.url));

/**
 * Security headers for every response and eta templates for the browser pages. Scripts and
 * styles run only with the per-response nonce; nothing may frame us; no referrer leaks the query.
 */
export default fp(async function htmlPages(app: FastifyInstance) {
  await app.register(fastifyHelmet, {
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
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
    crossOriginResourcePolicy: { policy: 'same-origin' },
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
