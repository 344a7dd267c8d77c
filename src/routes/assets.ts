import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

const css = readFileSync(fileURLToPath(new URL('../../views/assets/sign-in-with-agent.css', import.meta.url)));
const digest = createHash('sha256').update(css).digest('hex').slice(0, 12);

/** The "Sign in with agent" stylesheet under a name that changes with its content: cacheable for good. */
export const SIGN_IN_BUTTON_CSS = `/assets/sign-in-with-agent.${digest}.css`;

/**
 * GET /assets/sign-in-with-agent.css (stable name, revalidated daily) and its content-hashed twin
 * (immutable): the button's stylesheet that websites link from their own pages (docs/websites.md).
 */
export default async function assetRoutes(app: FastifyInstance) {
  const etag = `"${digest}"`;
  const send = (cacheControl: string) => async (request: FastifyRequest, reply: FastifyReply) => {
    // Loaded by other sites' pages: the JSON API's same-origin resource policy would block it.
    reply.header('cross-origin-resource-policy', 'cross-origin').header('cache-control', cacheControl).header('etag', etag);
    if (request.headers['if-none-match'] === etag) return reply.code(304).send();
    return reply.type('text/css; charset=utf-8').header('content-location', SIGN_IN_BUTTON_CSS).send(css);
  };
  const schema = { hide: true };
  app.get('/assets/sign-in-with-agent.css', { schema }, send('public, max-age=86400'));
  app.get(SIGN_IN_BUTTON_CSS, { schema }, send('public, max-age=31536000, immutable'));
}
