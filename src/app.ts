import fastifyCookie from '@fastify/cookie';
import fastifyFormbody from '@fastify/formbody';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { TrustProxy } from './config.js';
import { loggerOptions, requestLogger } from './logger.js';
import errorHandler, { sendError, toOAuthError } from './plugins/error-handler.js';
import htmlPages from './plugins/html-pages.js';
import { requestMetrics } from './plugins/metrics.js';
import openapi from './plugins/openapi.js';
import rateLimits from './plugins/rate-limit.js';
import agentAuthenticateRoute from './routes/agent-authenticate.js';
import assetRoutes from './routes/assets.js';
import authorizeRoute from './routes/authorize.js';
import authorizeCompleteRoute from './routes/authorize-complete.js';
import authorizeDecisionRoute from './routes/authorize-decision.js';
import checkStatusRoute from './routes/check-status.js';
import healthRoutes from './routes/health.js';
import homeRoute from './routes/home.js';
import introspectRoutes from './routes/introspect.js';
import metadataRoutes from './routes/metadata.js';
import revokeRoutes from './routes/revoke.js';
import tokenRoutes from './routes/token.js';
import userinfoRoutes from './routes/userinfo.js';
import type { Services } from './services.js';

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
  }
}

// A caller's (or proxy's) X-Request-ID is kept when it looks like an id, so one id follows a request across hops.
const REQUEST_ID = /^[\w.:+=@/-]{1,128}$/;

export interface AppOptions {
  logger?: FastifyServerOptions['logger'];
  loggerInstance?: FastifyServerOptions['loggerInstance'];
}

/**
 * TRUST_PROXY for Fastify. A hop count trusts that many proxies, the nearest first, so the address
 * the outermost of them saw is the client's (docs/operations.md); Fastify given a bare number
 * trusts none, hence the function.
 */
function trustProxyOption(trusted: TrustProxy): FastifyServerOptions['trustProxy'] {
  return typeof trusted === 'number' ? (_address: string, hop: number) => hop < trusted : trusted;
}

/** Shared by the public and the admin listener: logging, validation, error format. */
export function createFastify(services: Services, options: AppOptions = {}): FastifyInstance {
  const app = Fastify({
    logger: options.loggerInstance ? undefined : (options.logger ?? loggerOptions(services.config.logLevel)),
    loggerInstance: options.loggerInstance,
    trustProxy: trustProxyOption(services.config.trustProxy),
    bodyLimit: 64 * 1024,
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : crypto.randomUUID();
    },
    childLoggerFactory: requestLogger,
    routerOptions: { maxParamLength: 200 },
    // The router's own refusals (an over-long or badly encoded path parameter) bypass the error
    // handler; they get the same format. No browser route has path parameters, hence JSON.
    frameworkErrors: (err, request, reply) => sendError(toOAuthError(err, request), request, reply, false),
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.decorate('services', services);
  // Logs carry the same id as `reqId`: a caller quoting the header finds its request.
  // Callback-style hooks here and below: every request runs them, and an async hook costs a promise.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  // While draining, answers close their connection: one kept alive after closing began would hold
  // the shutdown until its keep-alive timeout.
  let closing = false;
  app.addHook('preClose', async () => void (closing = true));
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  return app;
}

/** The public listener: everything websites, agents and browsers talk to. */
export async function buildApp(services: Services, options: AppOptions = {}): Promise<FastifyInstance> {
  const app = createFastify(services, options);
  await app.register(errorHandler);
  await app.register(requestMetrics);
  await app.register(fastifyFormbody);
  await app.register(htmlPages);
  await app.register(rateLimits);
  // After the security headers (so /docs has them too), before the routes it describes.
  await app.register(openapi);
  await app.register(healthRoutes);
  await app.register(metadataRoutes);
  await app.register(tokenRoutes);
  await app.register(userinfoRoutes);
  await app.register(introspectRoutes);
  await app.register(revokeRoutes);
  // The sign-in pages are the only routes with cookies (the browser binding): nothing else parses them.
  await app.register(async (browser) => {
    await browser.register(fastifyCookie);
    await browser.register(authorizeRoute);
    await browser.register(authorizeCompleteRoute);
    await browser.register(authorizeDecisionRoute);
  });
  await app.register(agentAuthenticateRoute);
  await app.register(checkStatusRoute);
  await app.register(assetRoutes);
  await app.register(homeRoute);
  return app;
}
