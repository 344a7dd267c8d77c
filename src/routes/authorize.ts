import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { agentOfDocument, resolveClient } from '../clients/metadata-document.js';
import { InvalidClient, InvalidRequest, InvalidTarget, UnsupportedResponseType } from '../errors.js';
import { offersOwnerSignIn } from '../flows/owner-sign-in.js';
import { start } from '../flows/sign-in.js';
import { isRegisteredRedirect, redirectToClient } from '../oauth/redirect.js';
import { requestedResource } from '../oauth/resource-indicator.js';
import { parseResourceScope, parseScope } from '../oauth/scopes.js';
import { renderSignInPage } from '../pages/sign-in-pages.js';
import { byAddress } from '../plugins/rate-limit.js';
import { idText } from '../protocol/text.js';
import type { Client } from '../store/clients.js';
import { htmlPage, RATE_LIMITED, UNAVAILABLE } from './responses.js';

// The longest value each parameter may have.
const MAX_LENGTH = {
  client_id: 200,
  redirect_uri: 2000,
  response_type: 100,
  state: 2000,
  code_challenge: 128,
  code_challenge_method: 100,
  scope: 500,
  login_hint: 64,
  nonce: 500,
  resource: 2000,
  dpop_jkt: 43,
};
type Parameter = keyof typeof MAX_LENGTH;

// The schema takes any string, or several for a parameter sent twice, so that the handler checks
// everything (presence, repetition, length) in the order docs/protocol.md gives: the first failure wins.
const param = (name: Parameter) =>
  z
    .union([z.string(), z.array(z.string())])
    .optional()
    .describe(`at most ${MAX_LENGTH[name]} characters, sent once`);
const querySchema = z.object(
  Object.fromEntries(Object.keys(MAX_LENGTH).map((name) => [name, param(name as Parameter)])) as Record<Parameter, ReturnType<typeof param>>,
);
type AuthorizeQuery = z.infer<typeof querySchema>;

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

const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43,128}$/;
// An RFC 7638 SHA-256 thumbprint, base64url.
const JKT = /^[A-Za-z0-9_-]{43}$/;
const agentId = idText();

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
  const { config, store } = app.services;

  /** The registered resource a request names, if it names one (invalid_target otherwise). */
  async function knownResource(value: string | string[] | undefined) {
    if (typeof value === 'string' && value.length > MAX_LENGTH.resource) throw new InvalidTarget('resource is too long');
    const named = requestedResource(value);
    if (named === undefined) return undefined;
    const found = await store.resources.get(named);
    if (!found) throw new InvalidTarget(`unknown resource: ${named}`);
    return found;
  }

  const perIp = app.limiter('authorize-ip', config.rateLimits.authorizePerIp, byAddress);

  app.get('/authorize', { schema, config: { html: true }, onRequest: perIp }, async (request, reply) => {
    const query = request.query;

    const clientId = required(query, 'client_id');
    const client = await resolveClient(app.services, clientId);
    if (!client || !client.active) throw new InvalidClient('unknown or inactive client', 400);

    const redirectUri = required(query, 'redirect_uri');
    // Native clients (a metadata document, a dynamic registration) may redirect to any loopback port.
    if (!isRegisteredRedirect(client.redirect_uris, redirectUri, client.registration !== 'admin')) {
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
    // RFC 8707 §2: once the redirect URI and state are known good, a bad resource goes back to the client.
    let resource;
    try {
      resource = await knownResource(query.resource);
    } catch (err) {
      if (!(err instanceof InvalidTarget)) throw err;
      const error = { error: err.error, error_description: err.description, state, iss: config.issuer };
      return reply.redirect(redirectToClient(redirectUri, error), 302);
    }
    const asked = optional(query, 'scope');
    const scope = (resource ? parseResourceScope(asked, resource.scopes) : parseScope(asked)).join(' ');
    // An agent's own document names the one agent that may sign in through it.
    const loginHint = agentOfDocument(config.issuer, client.client_id) ?? optional(query, 'login_hint');
    if (loginHint !== undefined && !agentId.safeParse(loginHint).success) throw new InvalidRequest('login_hint must be an agent id');
    // OpenID Connect mode only; elsewhere an unknown parameter, ignored (RFC 6749 §3.1).
    const nonce = config.idTokenSigningAlg ? optional(query, 'nonce') : undefined;
    const dpopJkt = optional(query, 'dpop_jkt');
    if (dpopJkt !== undefined && !JKT.test(dpopJkt))
      throw new InvalidRequest('the dpop_jkt parameter must be a JWK SHA-256 thumbprint (43 characters of base64url)');

    if (client.registration === 'dynamic') await store.clients.markUsed(client.client_id);
    const created = await start(
      app.services,
      {
        client_id: client.client_id,
        redirect_uri: redirectUri,
        state,
        code_challenge: codeChallenge,
        scope,
        login_hint: loginHint ?? null,
        nonce: nonce ?? null,
        resource: resource?.resource ?? null,
        dpop_jkt: dpopJkt ?? null,
      },
      { log: request.log },
    );
    reply.bindBrowser(created.id, created.bindingSecret);
    return renderSignInPage(reply, 'waiting', {
      requestId: created.id,
      clientName: client.name,
      resourceName: resource?.name,
      ...describeClient(client),
      redirectUri,
      scope,
      expiresAt: created.expires_at,
      ownerSignIn: offersOwnerSignIn(client, loginHint),
    });
  });
}
