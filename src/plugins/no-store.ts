import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';

/**
 * onRequest hook for endpoints that answer with token state (userinfo, introspection, revocation, the
 * sign-in's status): set before the handler runs, so error responses carry the header too. Callback
 * style: it runs on every userinfo and introspection, and an async hook costs a promise per request.
 */
export function noStore(_request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
  reply.header('cache-control', 'no-store');
  done();
}

/** The same plus `Pragma: no-cache`, which RFC 6749 §5.1 asks of token responses for HTTP/1.0 caches. */
export function noStoreWithPragma(_request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) {
  reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
  done();
}
