import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { logAudit } from '../audit.js';
import { InvalidClient, InvalidRequest, UnsupportedResponseType } from '../errors.js';
import { bindBrowser } from '../oauth/browser-binding.js';
import { renderRequestPage } from '../oauth/request-pages.js';
import { parseScope } from '../oauth/scopes.js';
import { htmlPage, RATE_LIMITED, UNAVAILABLE } from '../openapi.js';

// Every parameter is optional at the schema level so that the handler can apply decisions.md's
// order ("first failure wins"); the schema only refuses wrong types and absurd lengths.
const param = (max: number) => z.string().max(max).optional();
const querySchema = z.object({
  client_id: param(200),
  redirect_uri: param(2000),
  response_type: param(100),
  state: param(2000),
  code_challenge: param(200),
  code_challenge_method: param(100),
  scope: param(500),
});
type AuthorizeQuery = z.infer<typeof querySchema>;

const schema = {
  tags: ['oauth', 'browser'],
  description:
    'Starts a sign-in in the user\'s browser (authorization code flow with PKCE S256; state is required). Shows the ' +
    'sign-in page, which carries the request id for the agent (<meta name="request-id"> and window.authRequest) and ' +
    'binds the request to this browser with a cookie; once the agent has authenticated, the page moves on to ' +
    '/authorize/complete. scope defaults to "openid email profile".',
  querystring: querySchema,
  response: {
    200: htmlPage('The sign-in page'),
    400: htmlPage('Error page, never a redirect: invalid_request, invalid_client, unsupported_response_type or invalid_scope'),
    429: htmlPage(`Error page: ${RATE_LIMITED}`),
    503: htmlPage(`Error page: ${UNAVAILABLE}`),
  },
};

const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43,128}$/;

function required<K extends keyof AuthorizeQuery>(query: AuthorizeQuery, name: K): string {
  const value = query[name];
  if (!value) throw new InvalidRequest(`the ${name} parameter is required`);
  return value;
}

/** GET /authorize: validates the request, records it, binds it to this browser, shows the page. */
export default async function authorizeRoute(fastify: FastifyInstance) {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { config, store } = app.services;

  const perIp = app.limiter('authorize-ip', config.rateLimits.authorizePerIp, (request) => request.ip);

  app.get('/authorize', { schema, config: { html: true }, onRequest: perIp }, async (request, reply) => {
    const query = request.query;

    const clientId = required(query, 'client_id');
    const client = await store.clients.get(clientId);
    if (!client || !client.active) throw new InvalidClient('unknown or inactive client', 400);

    const redirectUri = required(query, 'redirect_uri');
    if (!client.redirect_uris.includes(redirectUri)) {
      throw new InvalidRequest('redirect_uri is not registered for this client');
    }

    const responseType = required(query, 'response_type');
    if (responseType !== 'code') throw new UnsupportedResponseType(responseType);

    const state = required(query, 'state');
    const codeChallenge = required(query, 'code_challenge');
    if (!CODE_CHALLENGE.test(codeChallenge)) {
      throw new InvalidRequest('code_challenge must be 43 to 128 characters of base64url');
    }
    if (required(query, 'code_challenge_method') !== 'S256') {
      throw new InvalidRequest('code_challenge_method must be S256');
    }
    const scope = parseScope(query.scope).join(' ');

    const created = await store.requests.create(
      {
        client_id: client.client_id,
        redirect_uri: redirectUri,
        state,
        code_challenge: codeChallenge,
        scope,
        browser_hash: bindBrowser(request, reply, config),
      },
      config.ttl.authRequest,
    );
    app.services.metrics.signIns.inc({ stage: 'started' });
    logAudit(request.log, 'authorize_started', { request_id: created.id, client_id: client.client_id });
    return renderRequestPage(reply, 'waiting', {
      requestId: created.id,
      clientName: client.name,
      scope,
      expiresAt: created.expires_at,
    });
  });
}
