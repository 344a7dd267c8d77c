import { WEB_BOT_AUTH } from '@agent-auth/agent/http-signatures';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { directoryResponse } from '../agent-keys/directory.js';
import { errorResponses, UNAVAILABLE } from './responses.js';

const directory = z.object({ keys: z.array(z.record(z.string(), z.string())) });

/**
 * GET /.well-known/http-message-signatures-directory (docs/protocol.md, "Signed agent requests"):
 * the request-signing keys of the active agents, signed by the directory's own key.
 */
export default async function signingKeyDirectoryRoute(app: FastifyInstance) {
  const { services } = app;
  app.get(
    WEB_BOT_AUTH.directoryPath,
    {
      schema: {
        tags: ['signed requests'],
        description: `The public request-signing keys (Ed25519 JWKs, kid = RFC 7638 thumbprint) of every active agent, after the directory's own key, as \`${WEB_BOT_AUTH.directoryMediaType}\`; the response is signed (tag \`${WEB_BOT_AUTH.directoryTag}\`, covering \`@authority;req\` and \`content-digest\`).`,
        response: {
          200: { description: 'The key directory', content: { [WEB_BOT_AUTH.directoryMediaType]: { schema: directory } } },
          ...errorResponses({ 503: UNAVAILABLE }),
        },
      },
    },
    async (request, reply) => {
      services.metrics.signingKeyReads.inc({ read: 'directory' });
      const url = `${request.protocol}://${request.host}${request.url}`;
      const { body, headers } = await directoryResponse(services, url, services.config.signingKeysMaxAgeSeconds);
      // Bytes, not text: the media type goes out as it is, without a charset the digest does not cover.
      return reply.headers(headers).send(Buffer.from(body));
    },
  );
}
