import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { authorize, type AuthorizeParameter, MAX_LENGTH } from '../agent-sign-in/authorization-request.js';
import { offersOwnerSignIn } from '../agent-sign-in/owner-sign-in.js';
import { renderSignInPage } from '../pages/sign-in-pages.js';
import { byAddress } from '../plugins/rate-limit.js';
import type { Client } from '../store/clients.js';
import { htmlPage, RATE_LIMITED, UNAVAILABLE } from './responses.js';

// The schema takes any string, or several for a parameter sent twice, so that the handler checks
// everything (presence, repetition, length) in the order docs/protocol.md gives: the first failure wins.
const param = (name: AuthorizeParameter) =>
  z
    .union([z.string(), z.array(z.string())])
    .optional()
    .describe(`at most ${MAX_LENGTH[name]} characters, sent once`);
const querySchema = z.object(
  Object.fromEntries(Object.keys(MAX_LENGTH).map((name) => [name, param(name as AuthorizeParameter)])) as Record<
    AuthorizeParameter,
    ReturnType<typeof param>
  >,
);

const schema = {
  tags: ['oauth', 'browser'],
  description:
    "Starts a sign-in in the user's browser (authorization code flow with PKCE S256; state is required). Shows the " +
    'sign-in page, which carries the request id for the agent (<meta name="request-id"> and window.authRequest) and ' +
    'binds the request to this browser with a cookie; once the agent has authenticated, the page moves on to ' +
    '/authorize/complete. scope defaults to "openid email profile". login_hint (an agent id): only that agent may ' +
    'authenticate this sign-in. nonce (OpenID Connect mode only) is echoed in the ID token. resource (RFC 8707): a registered ' +
    'resource (an MCP server) the tokens are for; unknown, malformed or sent twice, it is an error redirect (invalid_target). dpop_jkt (RFC 9449 §10): ' +
    'the thumbprint of the DPoP key the code exchange must prove.',
  querystring: querySchema,
  response: {
    200: htmlPage('The sign-in page'),
    302: z.null().describe('Error redirect to redirect_uri with error=invalid_target, state and iss (RFC 8707 §2)'),
    400: htmlPage('Error page, never a redirect: invalid_request, invalid_client, unsupported_response_type or invalid_scope'),
    429: htmlPage(`Error page: ${RATE_LIMITED}`),
    503: htmlPage(`Error page: ${UNAVAILABLE}`),
  },
};

/**
 * What the page says of a client that registered itself or is a document (docs/protocol.md, "MCP
 * clients"): the name is its own claim, so the host of its client_id URL goes beside it, and a
 * client that can only redirect to this machine is flagged (a native app, or anyone's document).
 */
export function describeClient(client: Client) {
  if (client.registration === 'admin') return {};
  const onLoopback = (uri: string) => ['localhost', '127.0.0.1', '[::1]'].includes(new URL(uri).hostname);
  return {
    clientIdHost: client.registration === 'metadata_document' ? new URL(client.client_id).host : undefined,
    loopbackOnly: client.redirect_uris.every(onLoopback),
  };
}

/** GET /authorize: validates the request, records it, binds it to this browser, shows the page. */
export default async function authorizeRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { config } = app.services;

  const perIp = app.limiter('authorize-ip', config.rateLimits.authorizePerIp, byAddress);

  app.get('/authorize', { schema, config: { html: true }, onRequest: perIp }, async (request, reply) => {
    const authorized = await authorize(app.services, request.query, { log: request.log });
    if ('redirect' in authorized) return reply.redirect(authorized.redirect, 302);
    const { client, resource, signIn, started: created } = authorized;
    reply.bindBrowser(created.id, created.bindingSecret);
    return renderSignInPage(reply, 'waiting', {
      requestId: created.id,
      clientName: client.name,
      resourceName: resource?.name,
      ...describeClient(client),
      redirectUri: signIn.redirect_uri,
      scope: signIn.scope,
      expiresAt: created.expires_at,
      ownerSignIn: offersOwnerSignIn(client, signIn.login_hint),
    });
  });
}
