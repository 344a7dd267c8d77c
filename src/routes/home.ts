import type { FastifyInstance } from 'fastify';

/**
 * GET /: what a person who opens the server in a browser needs to find their way: what this is,
 * the discovery document, the API description, and where websites, agents and owners go. It shows
 * nothing of any client, agent or sign-in.
 */
export default async function homeRoute(app: FastifyInstance) {
  const { issuer, idTokenSigningAlg } = app.services.config;
  app.get('/', { schema: { hide: true }, config: { html: true } }, async (_request, reply) =>
    reply.view('home.eta', {
      nonce: reply.cspNonce,
      issuer,
      discovery: `${issuer}/.well-known/${idTokenSigningAlg ? 'openid-configuration' : 'oauth-authorization-server'}`,
    }),
  );
}
