import { createLocalJWKSet, type JSONWebKeySet, jwtVerify } from 'jose';
import { LRUCache } from 'lru-cache';
import type { Config } from '../config.js';
import { InvalidClient } from '../errors.js';
import type { ClientCall } from '../oauth/client-credentials.js';
import type { Store } from '../store/index.js';
import { agentDocument, agentOfDocument, type ClientDocuments } from './metadata-document.js';
import { fetchJsonDocument, FetchRefused } from './outbound-fetch.js';

/**
 * private_key_jwt (RFC 7523 §2.2, §3; OpenID Connect Core §9): the client signs a short JWT with
 * one of the keys of its document (`jwks`, or fetched from `jwks_uri`), iss = sub = its client_id,
 * aud = our issuer or token endpoint, an exp at most five minutes ahead, and a jti spent once.
 */

const MAX_LIFETIME_SECONDS = 300;
const CLOCK_SKEW_SECONDS = 30;
const JWKS_MAX_BYTES = 20 * 1024;
const JWKS_CACHE_MS = 5 * 60 * 1000;
export const CLIENT_ASSERTION_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'] as const;

export interface ClientAssertionDeps {
  config: Pick<Config, 'issuer'>;
  store: Pick<Store, 'clients' | 'agents' | 'agentKeys'>;
  clientDocuments: ClientDocuments;
  /** The key sets fetched from jwks_uri, per process (five minutes each). */
  clientKeySets: LRUCache<string, JSONWebKeySet>;
}

export const newClientKeySets = () => new LRUCache<string, JSONWebKeySet>({ max: 1000, ttl: JWKS_CACHE_MS });

/** The keys that may sign `clientId`'s assertions; undefined when it does not authenticate with private_key_jwt. */
async function keysOf(deps: ClientAssertionDeps, clientId: string): Promise<JSONWebKeySet | undefined> {
  const { config, store, clientDocuments, clientKeySets } = deps;
  const stored = await store.clients.assertionKeys(clientId);
  if (!stored) return undefined;
  const agentId = agentOfDocument(config.issuer, clientId);
  if (agentId !== undefined) return (await agentDocument(deps, agentId))?.jwks as JSONWebKeySet | undefined;
  if (stored.jwks) return stored.jwks as JSONWebKeySet;
  if (!stored.jwks_uri) return undefined;
  const known = clientKeySets.get(stored.jwks_uri);
  if (known) return known;
  const { body } = await fetchJsonDocument(new URL(stored.jwks_uri), clientDocuments.fetchOptions(JWKS_MAX_BYTES));
  const keys = (body as { keys?: unknown })?.keys;
  if (!Array.isArray(keys)) throw new FetchRefused('is not a JWK Set');
  clientKeySets.set(stored.jwks_uri, body as JSONWebKeySet);
  return body as JSONWebKeySet;
}

/**
 * Checks the call's client assertion and, when it holds, marks the call as its client's; throws
 * invalid_client otherwise (every reason alike to the caller, the reason in the description).
 */
export async function checkClientAssertion(deps: ClientAssertionDeps, call: ClientCall): Promise<void> {
  const { assertion, id: clientId } = call.credentials;
  if (assertion === undefined) return;
  const refuse = (why: string) => new InvalidClient(`client assertion refused: ${why}`);
  if (clientId === undefined) throw refuse('it names no client');
  let keys;
  try {
    keys = await keysOf(deps, clientId);
  } catch (err) {
    if (err instanceof FetchRefused) throw refuse(`the client's jwks_uri ${err.message}`);
    throw err;
  }
  if (!keys) throw refuse('the client does not authenticate with private_key_jwt');
  const { issuer } = deps.config;
  let payload;
  try {
    ({ payload } = await jwtVerify(assertion, createLocalJWKSet(keys), {
      algorithms: [...CLIENT_ASSERTION_ALGORITHMS],
      issuer: clientId,
      subject: clientId,
      audience: [issuer, `${issuer}/token`],
      requiredClaims: ['exp', 'jti'],
      clockTolerance: CLOCK_SKEW_SECONDS,
    }));
  } catch (err) {
    throw refuse((err as Error).message);
  }
  const { exp, jti } = payload as { exp: number; jti: unknown };
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > 200) throw refuse('jti must be 1 to 200 characters');
  if (exp > Date.now() / 1000 + MAX_LIFETIME_SECONDS + CLOCK_SKEW_SECONDS) throw refuse(`exp is more than ${MAX_LIFETIME_SECONDS} seconds ahead`);
  // Spent until no instance would accept it any more: its expiry plus the skew.
  if (!(await deps.store.clients.spendAssertion(clientId, jti, new Date((exp + CLOCK_SKEW_SECONDS) * 1000))))
    throw refuse('its jti was used already');
  call.client = { client_id: clientId, method: 'private_key_jwt' };
}
