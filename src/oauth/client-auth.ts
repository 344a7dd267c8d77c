import { z } from 'zod';
import { verifySecret } from '../crypto/secrets.js';
import { InvalidClient, InvalidRequest } from '../errors.js';
import type { StoredClientCredentials } from '../store/clients.js';

export interface AuthenticatedClient {
  client_id: string;
}

/** A parameter of the client endpoints: a single string (one sent empty is dropped first, see omitEmptyParameters). */
export const param = (max: number) => z.string().max(max).optional();

/** Body fields of client_secret_post, shared by the schemas of the three endpoints. */
export const clientCredentials = { client_id: param(200), client_secret: param(200) };

/**
 * The body of /introspect and /revoke. token_type_hint is accepted and ignored (RFC 7009 §2.1
 * allows it): the token's own format says whether it is an access or a refresh token.
 */
export const presentedTokenBody = z.object({ token: param(8192), token_type_hint: param(100), ...clientCredentials });

/** The client_secret_post fields of a request body, when it has any. */
export type CredentialFields = { client_id?: string; client_secret?: string } | null | undefined;

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
}

/** The client credentials a request presents, by HTTP Basic (`authorization`) or in the body. */
export function presentedCredentials(authorization: string | undefined, body: CredentialFields): PresentedCredentials {
  const basic = basicCredentials(authorization);
  // RFC 6749 §2.3: one method per request. A body client_id naming the same client is harmless.
  if (basic && (body?.client_secret !== undefined || (body?.client_id !== undefined && body.client_id !== basic.id))) {
    throw new InvalidRequest('use one client authentication method: HTTP Basic or client_id and client_secret in the body');
  }
  const id = basic?.id ?? body?.client_id;
  return { id: id && id.length <= 200 ? id : undefined, secret: basic?.secret ?? body?.client_secret ?? '' };
}

/**
 * One call of /token, /introspect or /revoke: the credentials it presents, and its client once it
 * has authenticated. From then on its failures are the client's own, not a stranger's
 * (src/plugins/client-auth.ts counts them so).
 */
export interface ClientCall {
  readonly credentials: PresentedCredentials;
  client?: AuthenticatedClient;
}

/**
 * The one way a client authenticates: `stored` is the client the credentials name, as read from the
 * store. Sets and returns `call.client` if that client is active and the secret is its secret, or
 * throws invalid_client. Unknown client, inactive client and wrong secret cost the same hash work and
 * get the same answer. A second method (private_key_jwt, say) would be added here.
 */
export function authenticateClient(call: ClientCall, stored: StoredClientCredentials | undefined): AuthenticatedClient {
  const { secret } = call.credentials;
  const secretOk = verifySecret(secret, stored?.secret_hash);
  if (!stored || !secretOk || !stored.active || !secret) throw new InvalidClient();
  call.client = { client_id: stored.client_id };
  return call.client;
}
