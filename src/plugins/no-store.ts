import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * onRequest hook for endpoints that answer with tokens or token state (RFC 6749 §5.1): set before
 * the handler runs, so error responses carry the headers too.
 */
export async function noStore(_request: FastifyRequest, reply: FastifyReply) {
  reply.header('cache-control', 'no-store').header('pragma', 'no-cache');
}
