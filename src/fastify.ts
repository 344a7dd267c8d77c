import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { TrustProxy } from './config.js';
import { loggerOptions, requestLogger } from './logger.js';
import { sendError, toOAuthError } from './plugins/error-handler.js';
import type { Services } from './services.js';

declare module 'fastify' {
  interface FastifyInstance {
    services: Services;
  }
}

// A caller's (or proxy's) X-Request-ID is kept when it looks like an id, so one id follows a request across hops.
const REQUEST_ID = /^[\w.:+=@/-]{1,128}$/;

/** The request line and headers together, at most (Node's default is 16 KiB). */
export const MAX_HEADER_BYTES = 8 * 1024;

export interface AppOptions {
  /** Which proxies to believe; TRUST_PROXY unless given. */
  trustProxy?: TrustProxy;
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
    trustProxy: trustProxyOption(options.trustProxy ?? services.config.trustProxy),
    bodyLimit: 64 * 1024,
    // Every header of ours fits in a few hundred bytes; past 8 KiB, 431 (docs/security.md, "Checked").
    http: { maxHeaderSize: MAX_HEADER_BYTES },
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
