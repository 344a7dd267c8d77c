import type { Server } from 'node:http';
import { BlockList, isIPv4 } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import type { TrustProxy } from './config.js';
import { ServiceUnavailable } from './errors.js';
import { AccessLog, loggerOptions, requestLogger } from './logger.js';
import { sendError, toOAuthError } from './plugins/error-handler.js';
import { addressKey } from './plugins/rate-limit.js';
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

// TRUST_PROXY's named ranges as subnets.
const NAMED_RANGES: Record<string, [string, number][]> = {
  loopback: [
    ['127.0.0.0', 8],
    ['::1', 128],
  ],
  linklocal: [
    ['169.254.0.0', 16],
    ['fe80::', 10],
  ],
  uniquelocal: [
    ['10.0.0.0', 8],
    ['172.16.0.0', 12],
    ['192.168.0.0', 16],
    ['fc00::', 7],
  ],
};

/**
 * At most `max` open connections per address (an IPv6 /64 counts as one), past which a new one is
 * closed at once: a client that opens thousands and drips into each holds no more than that. The
 * proxies the listener trusts are exempt, as every client behind them shares their address; with
 * `true` or a hop count every peer is such a proxy (docs/operations.md, "Slow clients").
 */
function capConnectionsPerAddress(server: Server, max: number, trusted: TrustProxy) {
  if (max === 0 || trusted === true || typeof trusted === 'number') return;
  const proxies = new BlockList();
  for (const entry of trusted || []) {
    for (const [address, bits] of NAMED_RANGES[entry] ?? [entry.split('/')]) {
      const family = isIPv4(String(address)) ? 'ipv4' : 'ipv6';
      proxies.addSubnet(String(address), Number(bits ?? (family === 'ipv4' ? 32 : 128)), family);
    }
  }
  const open = new Map<string, number>();
  server.on('connection', (socket) => {
    const address = (socket.remoteAddress ?? '').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
    if (!address || proxies.check(address, isIPv4(address) ? 'ipv4' : 'ipv6')) return;
    const key = addressKey(address);
    const count = (open.get(key) ?? 0) + 1;
    if (count > max) return void socket.destroy();
    open.set(key, count);
    socket.once('close', () => {
      const left = open.get(key)! - 1;
      if (left === 0) open.delete(key);
      else open.set(key, left);
    });
  });
}

/** Shared by the public and the admin listener: logging, validation, error format. */
export function createFastify(services: Services, options: AppOptions = {}): FastifyInstance {
  const { requestTimeoutSeconds, headersTimeoutSeconds, maxConnectionsPerIp } = services.config.connections;
  const trustProxy = options.trustProxy ?? services.config.trustProxy;
  const app = Fastify({
    logger: options.loggerInstance ? undefined : (options.logger ?? loggerOptions(services.config.logLevel)),
    loggerInstance: options.loggerInstance,
    trustProxy: trustProxyOption(trustProxy),
    bodyLimit: 64 * 1024,
    // A request (headers and body) that has not arrived in time gets 408 and its connection closed;
    // Node checks every second rather than its default 30 (docs/operations.md, "Slow clients").
    requestTimeout: requestTimeoutSeconds * 1000,
    // Every header of ours fits in a few hundred bytes; past 8 KiB, 431 (docs/security.md, "Checked").
    http: {
      maxHeaderSize: MAX_HEADER_BYTES,
      headersTimeout: headersTimeoutSeconds * 1000,
      requestTimeout: requestTimeoutSeconds * 1000,
      connectionsCheckingInterval: 1000,
    },
    // Requests that reach a closing listener get our 503 (below), not Fastify's own body.
    return503OnClosing: false,
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : crypto.randomUUID();
    },
    childLoggerFactory: requestLogger,
    logController: new AccessLog(),
    routerOptions: { maxParamLength: 200 },
    // The router's own refusals (an over-long or badly encoded path parameter) bypass the error
    // handler; they get the same format. No browser route has path parameters, hence JSON.
    frameworkErrors: (err, request, reply) => sendError(services.metrics.failures, toOAuthError(err, request), request, reply, false),
  });
  capConnectionsPerAddress(app.server, maxConnectionsPerIp, trustProxy);
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.decorate('services', services);
  // Logs carry the same id as `reqId`: a caller quoting the header finds its request.
  // Callback-style hooks here and below: every request runs them, and an async hook costs a promise.
  // While draining, answers close their connection: one kept alive after closing began would hold
  // the shutdown until its keep-alive timeout.
  let closing = false;
  app.addHook('preClose', async () => void (closing = true));
  // One hook for both: the request id, and for one that arrives while the listener closes, a 503 (the
  // balancer should send it elsewhere, so say when to retry).
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done(closing ? new ServiceUnavailable('the server is shutting down; try again') : undefined);
  });
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });
  return app;
}
