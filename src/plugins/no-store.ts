import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';

/**
 * onRequest hook for endpoints that answer with tokens or token state (RFC 6749 §5.1): set before
 * the handler runs, so error responses carry the headers too. Callback style: it runs on every
 * userinfo and introspection, and an async hook costs a promise per request.
 */
export function noStore(_request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
  reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
  done();
}
