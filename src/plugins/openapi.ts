import { readFileSync } from 'node:fs';
import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';

// One level above src/ and dist/ alike.
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/**
 * GET /docs/json: the OpenAPI 3 document built from the routes' zod schemas (their descriptions,
 * tags and responses). GET /docs: Swagger UI over it, under the pages' CSP: its scripts are files
 * served from 'self', and it fetches nothing but /docs/json.
 */
export default fp(async function openapi(app: FastifyInstance) {
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'agent-auth',
        version,
        description: 'OAuth 2.1 authorization server through which AI agents sign in to websites.',
      },
      servers: [{ url: app.services.config.issuer }],
      tags: [
        { name: 'oauth', description: 'Authorization code flow with PKCE, tokens and token state' },
        { name: 'browser', description: "Pages and steps the user's browser goes through" },
        { name: 'agent', description: "The agent's back channel" },
        { name: 'owner', description: 'The people agents act for: email-link sign-in and the owner API (a session cookie)' },
        { name: 'discovery', description: 'Metadata for client libraries' },
        { name: 'signed requests', description: "Web Bot Auth: the agents' request-signing key directory, and who holds a key" },
        { name: 'health', description: 'Probes for orchestrators and load balancers' },
      ],
      components: {
        securitySchemes: {
          bearerToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'An access token from POST /token' },
          clientSecretBasic: {
            type: 'http',
            scheme: 'basic',
            description: 'Client id and secret; client_id and client_secret in the body (client_secret_post) work as well',
          },
        },
      },
    },
    transform: jsonSchemaTransform,
  });
  await app.register(fastifySwaggerUi, {
    routePrefix: '/docs',
    // Swagger UI injects a <style> element; inline styles (never scripts) are allowed under /docs only.
    // A nonce in style-src would make browsers ignore 'unsafe-inline', so the directive is replaced whole.
    transformStaticCSP: (header) => header.replace(/style-src [^;]*/, "style-src 'self' 'unsafe-inline'"),
  });
});
