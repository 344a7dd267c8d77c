import { z } from 'zod';
import { verifySecret } from '../crypto/secrets.js';
import { InvalidClient, InvalidRequest } from '../errors.js';
import type { StoredClientCredentials, TokenEndpointAuthMethod } from '../store/clients.js';

export interface AuthenticatedClient {
  client_id: string;
  method: TokenEndpointAuthMethod;
}

/** RFC 7523 §2.2: the one client assertion type. */
export const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** A parameter of the client endpoints: a single string (one sent empty is dropped first, see omitEmptyParameters). */
export const param = (max: number) => z.string().max(max).optional();

/** Body fields of client_secret_post and private_key_jwt, shared by the schemas of the three endpoints. */
export const clientCredentials = {
  client_id: param(200),
  client_secret: param(200),
  client_assertion_type: param(200),
  client_assertion: param(8192),
};

/**
 * The body of /introspect and /revoke. token_type_hint is accepted and ignored (RFC 7009 §2.1
 * allows it): the token's own format says whether it is an access or a refresh token.
 */
export const presentedTokenBody = z.object({ token: param(8192), token_type_hint: param(100), ...clientCredentials });

/** The client authentication fields of a request body, when it has any. */
export type CredentialFields =
  { client_id?: string; client_secret?: string; client_assertion_type?: string; client_assertion?: string } | null | undefined;

// RFC 6749 §2.3.1: id and secret are form-urlencoded before they go into the Basic credentials.
function formDecode(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    throw new InvalidRequest('malformed HTTP Basic credentials');
  }
}

const SPACE = 0x20;

/**
 * Credentials from `Authorization: Basic …`; other schemes are not client authentication. Parsed by
 * index, without a regular expression: a pattern with two runs of spaces that can overlap costs time
 * quadratic in the header's length on a header that fails to match (docs/security.md, "Checked").
 */
function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  if (header === undefined || header.length < 6 || header.slice(0, 6).toLowerCase() !== 'basic ') return undefined;
  let start = 6;
  while (header.charCodeAt(start) === SPACE) start++;
  let end = header.length;
  while (end > start && header.charCodeAt(end - 1) === SPACE) end--;
  const token = header.slice(start, end);
  if (/\s/.test(token)) return undefined;
  const decoded = Buffer.from(token, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new InvalidRequest('malformed HTTP Basic credentials');
  return { id: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) };
}

export interface PresentedCredentials {
  /** Undefined when the request names no client worth looking up. */
  id?: string;
  /** Empty when none was sent. */
  secret: string;
  /** private_key_jwt: the client assertion (RFC 7523 §2.2), checked before the endpoint runs (src/clients/client-assertion.ts). */
  assertion?: string;
}

/** The client an assertion names (its sub), unverified: only to know whose keys check it. */
function assertedClient(assertion: string): string | undefined {
  try {
    const sub: unknown = JSON.parse(Buffer.from(assertion.split('.')[1] ?? '', 'base64url').toString()).sub;
    return typeof sub === 'string' ? sub : undefined;
  } catch {
    return undefined;
  }
}

/** The client credentials a request presents, by HTTP Basic (`authorization`) or in the body. */
export function presentedCredentials(authorization: string | undefined, body: CredentialFields): PresentedCredentials {
  const basic = basicCredentials(authorization);
  // RFC 6749 §2.3: one method per request. A body client_id naming the same client is harmless.
  if (basic && (body?.client_secret !== undefined || (body?.client_id !== undefined && body.client_id !== basic.id))) {
    throw new InvalidRequest('use one client authentication method: HTTP Basic or client_id and client_secret in the body');
  }
  const assertion = body?.client_assertion;
  if (assertion !== undefined || body?.client_assertion_type !== undefined) {
    if (basic || body?.client_secret !== undefined) throw new InvalidRequest('use one client authentication method');
    if (body?.client_assertion_type !== JWT_BEARER || !assertion)
      throw new InvalidClient(`private_key_jwt needs client_assertion_type ${JWT_BEARER} and client_assertion`);
  }
  const id = basic?.id ?? body?.client_id ?? (assertion && assertedClient(assertion));
  return { id: id && id.length <= 200 ? id : undefined, secret: basic?.secret ?? body?.client_secret ?? '', ...(assertion && { assertion }) };
}

/**
 * One call of /token, /introspect or /revoke: the credentials it presents, and its client once it
 * has authenticated. From then on its failures are the client's own, not a stranger's
 * (src/plugins/client-endpoints.ts counts them so).
 */
export interface ClientCall {
  readonly credentials: PresentedCredentials;
  client?: AuthenticatedClient;
}

/**
 * The one way a client authenticates: `stored` is the client the credentials name, as read from the
 * store. Sets and returns `call.client` if that client is active and the call proves it, or throws
 * invalid_client: its secret (client_secret_post; unknown client, inactive client and wrong secret
 * cost the same hash work and get the same answer), nothing at all for a public client (`none`,
 * which PKCE protects), or an assertion checked before the endpoint ran (private_key_jwt).
 */
export function authenticateClient(call: ClientCall, stored: StoredClientCredentials | undefined): AuthenticatedClient {
  const method = stored?.token_endpoint_auth_method ?? 'client_secret_post';
  if (call.client || call.credentials.assertion !== undefined) {
    if (!call.client || !stored?.active || stored.client_id !== call.client.client_id || method !== call.client.method) throw new InvalidClient();
    return call.client;
  }
  const { secret } = call.credentials;
  if (method !== 'client_secret_post') {
    // A public client presents its id alone; a private_key_jwt client without its assertion fails.
    if (!stored?.active || method !== 'none' || secret) throw new InvalidClient();
    call.client = { client_id: stored.client_id, method };
    return call.client;
  }
  const secretOk = verifySecret(secret, stored?.secret_hash);
  if (!stored || !secretOk || !stored.active || !secret) throw new InvalidClient();
  call.client = { client_id: stored.client_id, method };
  return call.client;
}
