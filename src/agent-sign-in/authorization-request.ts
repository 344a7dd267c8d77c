import { agentOfDocument, type ClientResolverDeps, resolveClient } from '../clients/metadata-document.js';
import type { Config } from '../config.js';
import { InvalidClient, InvalidRequest, InvalidTarget, UnsupportedResponseType } from '../errors.js';
import type { EventContext } from '../events/emitter.js';
import { isRegisteredRedirect, redirectToClient } from '../oauth/redirect.js';
import { requestedResource } from '../oauth/resource-indicator.js';
import { parseResourceScope, parseScope } from '../oauth/scopes.js';
import { idText } from '../protocol/text.js';
import type { Client } from '../store/clients.js';
import type { Store } from '../store/index.js';
import type { Resource } from '../store/resources.js';
import type { NewSignIn } from '../store/sign-ins.js';
import { type SignInDeps, start } from './sign-in.js';

/**
 * The checks of an authorization request (GET /authorize), one small step per rule, in the order
 * docs/protocol.md gives: the first failure wins. Each step takes the raw query (a parameter may
 * arrive as several strings when it was sent twice) and what the steps before it established.
 */

/** The longest value each parameter may have. */
export const MAX_LENGTH = {
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
export type AuthorizeParameter = keyof typeof MAX_LENGTH;

/** The query as it arrives: any string, or several for a parameter sent twice. */
export type AuthorizeQuery = Partial<Record<AuthorizeParameter, string | string[]>>;

export interface AuthorizeDeps extends ClientResolverDeps, SignInDeps {
  config: Pick<Config, 'issuer' | 'idTokenSigningAlg'> & SignInDeps['config'];
  store: Pick<Store, 'clients' | 'resources'> & ClientResolverDeps['store'] & SignInDeps['store'];
}

const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43,128}$/;
// An RFC 7638 SHA-256 thumbprint, base64url.
const JKT = /^[A-Za-z0-9_-]{43}$/;
const agentId = idText();

/** A parameter sent at most once (RFC 6749 §3.1) and not over-long. */
export function optional(query: AuthorizeQuery, name: AuthorizeParameter): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) throw new InvalidRequest(`the ${name} parameter must not be repeated`);
  if (value !== undefined && value.length > MAX_LENGTH[name]) throw new InvalidRequest(`the ${name} parameter is too long`);
  return value;
}

export function required(query: AuthorizeQuery, name: AuthorizeParameter): string {
  const value = optional(query, name);
  if (!value) throw new InvalidRequest(`the ${name} parameter is required`);
  return value;
}

/** The client: registered, a document, or one that registered itself; active. */
export async function checkClient(deps: ClientResolverDeps, query: AuthorizeQuery): Promise<Client> {
  const client = await resolveClient(deps, required(query, 'client_id'));
  if (!client || !client.active) throw new InvalidClient('unknown or inactive client', 400);
  return client;
}

/** A redirect URI the client registered; native clients (a document, a dynamic registration) may use any loopback port. */
export function checkRedirectUri(client: Client, query: AuthorizeQuery): string {
  const redirectUri = required(query, 'redirect_uri');
  if (!isRegisteredRedirect(client.redirect_uris, redirectUri, client.registration !== 'admin')) {
    throw new InvalidRequest('redirect_uri is not registered for this client');
  }
  return redirectUri;
}

export function checkResponseType(query: AuthorizeQuery): void {
  const responseType = required(query, 'response_type');
  if (responseType !== 'code') throw new UnsupportedResponseType(responseType);
}

/** PKCE with S256 only (RFC 7636); returns the challenge. */
export function checkPkce(query: AuthorizeQuery): string {
  const codeChallenge = required(query, 'code_challenge');
  if (!CODE_CHALLENGE.test(codeChallenge)) throw new InvalidRequest('code_challenge must be 43 to 128 characters of base64url');
  if (required(query, 'code_challenge_method') !== 'S256') throw new InvalidRequest('code_challenge_method must be S256');
  return codeChallenge;
}

/** The registered resource (RFC 8707) the request names, if it names one; invalid_target otherwise. */
export async function checkResource({ store }: Pick<AuthorizeDeps, 'store'>, query: AuthorizeQuery): Promise<Resource | undefined> {
  const value = query.resource;
  if (typeof value === 'string' && value.length > MAX_LENGTH.resource) throw new InvalidTarget('resource is too long');
  const named = requestedResource(value);
  if (named === undefined) return undefined;
  const found = await store.resources.get(named);
  if (!found) throw new InvalidTarget(`unknown resource: ${named}`);
  return found;
}

/** The scope asked, or the default; a resource's own scopes when the request names one. */
export function checkScope(query: AuthorizeQuery, resource: Resource | undefined): string {
  const asked = optional(query, 'scope');
  return (resource ? parseResourceScope(asked, resource.scopes) : parseScope(asked)).join(' ');
}

/** The one agent that may authenticate: the one whose own document is the client, or the website's login_hint. */
export function checkLoginHint({ config }: Pick<AuthorizeDeps, 'config'>, client: Client, query: AuthorizeQuery): string | undefined {
  const loginHint = agentOfDocument(config.issuer, client.client_id) ?? optional(query, 'login_hint');
  if (loginHint !== undefined && !agentId.safeParse(loginHint).success) throw new InvalidRequest('login_hint must be an agent id');
  return loginHint;
}

/** OpenID Connect mode only; elsewhere an unknown parameter, ignored (RFC 6749 §3.1). */
export function checkNonce({ config }: Pick<AuthorizeDeps, 'config'>, query: AuthorizeQuery): string | undefined {
  return config.idTokenSigningAlg ? optional(query, 'nonce') : undefined;
}

/** The DPoP key the code exchange must prove (RFC 9449 §10), as its thumbprint. */
export function checkDpopJkt(query: AuthorizeQuery): string | undefined {
  const dpopJkt = optional(query, 'dpop_jkt');
  if (dpopJkt !== undefined && !JKT.test(dpopJkt)) {
    throw new InvalidRequest('the dpop_jkt parameter must be a JWK SHA-256 thumbprint (43 characters of base64url)');
  }
  return dpopJkt;
}

/** A request that passed every check: what the sign-in records, and what its page shows. */
export interface CheckedAuthorization {
  client: Client;
  resource: Resource | undefined;
  signIn: Omit<NewSignIn, 'browser_hash'>;
}

/**
 * Every check, in order. A bad resource, once the redirect URI and state are known good, goes back to
 * the client (RFC 8707 §2): `{ redirect }`; any other failure throws, for an error page.
 */
export async function checkAuthorization(deps: AuthorizeDeps, query: AuthorizeQuery): Promise<CheckedAuthorization | { redirect: string }> {
  const client = await checkClient(deps, query);
  const redirectUri = checkRedirectUri(client, query);
  checkResponseType(query);
  const state = required(query, 'state');
  const codeChallenge = checkPkce(query);
  let resource;
  try {
    resource = await checkResource(deps, query);
  } catch (err) {
    if (!(err instanceof InvalidTarget)) throw err;
    const error = { error: err.error, error_description: err.description, state, iss: deps.config.issuer };
    return { redirect: redirectToClient(redirectUri, error) };
  }
  const scope = checkScope(query, resource);
  const loginHint = checkLoginHint(deps, client, query);
  const nonce = checkNonce(deps, query);
  const dpopJkt = checkDpopJkt(query);
  const signIn = {
    client_id: client.client_id,
    redirect_uri: redirectUri,
    state,
    code_challenge: codeChallenge,
    scope,
    login_hint: loginHint ?? null,
    nonce: nonce ?? null,
    resource: resource?.resource ?? null,
    dpop_jkt: dpopJkt ?? null,
  };
  return { client, resource, signIn };
}

/**
 * GET /authorize: checks the request and starts its sign-in (src/agent-sign-in/sign-in.ts, start); the
 * caller binds the browser with `bindingSecret` and shows the page.
 */
export async function authorize(deps: AuthorizeDeps, query: AuthorizeQuery, context: EventContext) {
  const checked = await checkAuthorization(deps, query);
  if ('redirect' in checked) return checked;
  if (checked.client.registration === 'dynamic') await deps.store.clients.markUsed(checked.client.client_id);
  return { ...checked, started: await start(deps, checked.signIn, context) };
}
