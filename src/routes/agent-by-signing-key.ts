import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { signingKeyAgent } from '../agent-keys/directory.js';
import { kidSchema } from '../agent-keys/registration.js';
import { NotFound } from '../errors.js';
import { errorResponses, UNAVAILABLE } from './responses.js';

const agentView = z.object({
  agent_id: z.string(),
  name: z.string().nullable(),
  owner_email_verified: z.boolean().describe("whether the agent's owner proved their email address (the address itself is never shown)"),
  active: z.boolean(),
});

/**
 * GET /api/agents/by-signing-key/:kid (docs/protocol.md, "Signed agent requests"): which agent holds
 * a request-signing key, for a website that verified a signature by it. Public, as the directory is.
 */
export default async function agentBySigningKeyRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { services } = app;
  app.get(
    '/api/agents/by-signing-key/:kid',
    {
      schema: {
        tags: ['signed requests'],
        description: 'The agent that holds a request-signing key: its id, name, whether its owner’s email is verified, and whether it is active.',
        params: z.object({ kid: kidSchema }),
        response: { 200: agentView, ...errorResponses({ 404: 'not_found: no agent holds a request-signing key with this kid', 503: UNAVAILABLE }) },
      },
    },
    async (request, reply) => {
      const agent = await signingKeyAgent(services, request.params.kid);
      services.metrics.signingKeyReads.inc({ read: agent ? 'lookup_found' : 'lookup_unknown' });
      if (!agent) throw new NotFound('no agent holds a request-signing key with this kid');
      // No longer than the directory: a website learns of a deactivation as soon as of a deleted key.
      return reply.header('cache-control', `public, max-age=${services.config.signingKeysMaxAgeSeconds}`).send(agent);
    },
  );
}
