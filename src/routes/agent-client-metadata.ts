import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { agentDocument } from '../clients/metadata-document.js';
import { NotFound } from '../errors.js';
import { recordId } from '../shapes/ids.js';
import { errorResponses } from './responses.js';

const schema = {
  tags: ['discovery'],
  description:
    "The agent's own Client ID Metadata Document: its client_id is this URL, for MCP servers that take agent-auth's " +
    "tokens. private_key_jwt with the agent's registered keys as jwks; loopback redirect URIs for the agent SDK's " +
    'headless sign-in. 404 for an unknown or inactive agent.',
  params: z.object({ agent_id: recordId() }),
  response: {
    200: z.object({
      client_id: z.string(),
      client_name: z.string(),
      redirect_uris: z.array(z.string()),
      grant_types: z.array(z.string()),
      response_types: z.array(z.string()),
      token_endpoint_auth_method: z.literal('private_key_jwt'),
      jwks: z.object({ keys: z.array(z.record(z.string(), z.string())) }),
    }),
    ...errorResponses({ 404: 'not_found: no active agent with this id' }),
  },
};

/** GET /agents/:agent_id/client-metadata.json (docs/protocol.md, "The agent's client metadata document"). */
export default async function agentClientMetadataRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  app.get('/agents/:agent_id/client-metadata.json', { schema }, async (request, reply) => {
    const document = await agentDocument(app.services, request.params.agent_id);
    if (!document) throw new NotFound('no active agent with this id');
    // Read by the agent's MCP servers' authorization server (us) and anyone checking it: a short cache.
    void reply.header('cache-control', 'public, max-age=60');
    return document;
  });
}
