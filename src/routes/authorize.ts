import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { logAudit } from '../audit.js';
import { InvalidClient, InvalidRequest, UnsupportedResponseType } from '../errors.js';
import { bindBrowser } from '../oauth/browser-binding.js';
import { renderRequestPage } from '../oauth/request-pages.js';
import { parseScope } from '../oauth/scopes.js';
import { htmlPage, RATE_LIMITED, UNAVAILABLE } from '../openapi.js';

// The longest value each parameter may have.
const MAX_LENGTH = {
  client_id: 200,
  redirect_uri: 2000,
  response_type: 100,
  state: 2000,
  code_challenge: 128,
  code_challenge_method: 100,
  scope: 500,
};
type Parameter = keyof typeof MAX_LENGTH;

// The schema takes any string, or several for a parameter sent twice, so that the handler checks
// everything (presence, repetition, length) in decisions.md's order: the first failure wins.
const param = (name: Parameter) =>
  z.union([z.string(), z.array(z.string())]).optional().describe(`at most ${MAX_LENGTH[name]} characters, sent once`);
const querySchema = z.object(Object.fromEntries(Object.keys(MAX_LENGTH).map((name) => [name, param(name as Parameter)])) as Record<Parameter, ReturnType<typeof param>>);
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

/** A parameter sent at most once (RFC 6749 §3.1) and not over-long. */
function optional(query: AuthorizeQuery, name: Parameter): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) throw new InvalidRequest(`the ${name} parameter must not be repeated`);
  if (value !== undefined && value.length > MAX_LENGTH[name]) throw new InvalidRequest(`the ${name} parameter is too long`);
  return value;
}

function required(query: AuthorizeQuery, name: Parameter): string {
  const value = optional(query, name);
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
    const scope = parseScope(optional(query, 'scope')).join(' ');

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
