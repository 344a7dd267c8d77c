import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { z } from 'zod';
import { verifySecret } from '../crypto/secrets.js';
import { InvalidClient, InvalidRequest } from '../errors.js';
import type { StoredClientCredentials } from '../store/clients.js';

export interface AuthenticatedClient {
  client_id: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the client authentication hook, on /token, /introspect and /revoke only. */
    client: AuthenticatedClient;
  }
}

/** A parameter of the client endpoints: a single string (one sent empty is dropped first, see omitEmptyParameters). */
export const param = (max: number) => z.string().max(max).optional();

/**
 * preValidation hook of /token, /introspect and /revoke: a parameter sent without a value is
 * treated as omitted (RFC 6749 §3.1). Here rather than as a transform in each schema: zod
 * transforms cost more than the rest of the request's validation (bench/README.md).
 */
export function omitEmptyParameters(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) {
  const body = request.body as Record<string, unknown> | null;
  if (typeof body === 'object' && body !== null) for (const key in body) if (body[key] === '') body[key] = undefined;
  done();
}

/** Body fields of client_secret_post, shared by the schemas of the three endpoints. */
export const clientCredentials = { client_id: param(200), client_secret: param(200) };

/**
 * The body of /introspect and /revoke. token_type_hint is accepted and ignored (RFC 7009 §2.1
 * allows it): the token's own format says whether it is an access or a refresh token.
 */
export const presentedTokenBody = z.object({ token: param(8192), token_type_hint: param(100), ...clientCredentials });

// RFC 6749 §2.3.1: id and secret are form-urlencoded before they go into the Basic credentials.
function formDecode(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, ' '));
  } catch {
    throw new InvalidRequest('malformed HTTP Basic credentials');
  }
}

/** Credentials from `Authorization: Basic …`; other schemes are not client authentication. */
function basicCredentials(header: string | undefined): { id: string; secret: string } | undefined {
  const match = /^basic +(\S*) *$/i.exec(header ?? '');
  if (!match) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
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

/** The client credentials a request presents, by HTTP Basic or in the body. */
export function presentedCredentials(request: FastifyRequest): PresentedCredentials {
  const body = request.body as { client_id?: string; client_secret?: string };
  const basic = basicCredentials(request.headers.authorization);
  // RFC 6749 §2.3: one method per request. A body client_id naming the same client is harmless.
  if (basic && (body.client_secret !== undefined || (body.client_id !== undefined && body.client_id !== basic.id))) {
    throw new InvalidRequest('use one client authentication method: HTTP Basic or client_id and client_secret in the body');
  }
  const id = basic?.id ?? body.client_id;
  return { id: id && id.length <= 200 ? id : undefined, secret: basic?.secret ?? body.client_secret ?? '' };
}

/**
 * How the client a request names is read: by default on its own; an endpoint may fold the read into
 * the statement it runs anyway (introspection, the refresh rotation), to keep one round trip.
 */
export type ClientRead = (clientId: string) => Promise<StoredClientCredentials | undefined> | StoredClientCredentials | undefined;

/**
 * The one way a client authenticates, on /token, /introspect and /revoke: sets `request.client` if
 * the client named by `credentials` (read by `read`) is active and `secret` is its secret, or throws
 * invalid_client. Unknown client, inactive client and wrong secret cost the same hash work and get
 * the same answer. A second method (private_key_jwt, say) would be added here.
 */
export async function authenticateClient(
  request: FastifyRequest,
  { id, secret }: PresentedCredentials = presentedCredentials(request),
  read: ClientRead = (clientId) => request.server.services.store.clients.getWithSecret(clientId),
): Promise<void> {
  const client = id === undefined ? undefined : await read(id);
  const secretOk = verifySecret(secret, client?.secret_hash);
  if (!client || !secretOk || !client.active || !secret) throw new InvalidClient();
  request.client = { client_id: client.client_id };
}

/** The client id a request claims (it may not authenticate), or undefined when it names none. */
export function claimedClientId(request: FastifyRequest): string | undefined {
  try {
    return basicCredentials(request.headers.authorization)?.id ?? (request.body as { client_id?: string } | undefined)?.client_id;
  } catch {
    return undefined; // A malformed Basic header claims no one.
  }
}
