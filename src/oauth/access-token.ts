import { createHmac } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Keyring } from '../crypto/keyring.js';
import { randomToken, safeEqual } from '../crypto/secrets.js';
import type { GrantSubject } from '../store/grants.js';
import type { Store } from '../store/index.js';

const claimsSchema = z.object({
  iss: z.string(),
  sub: z.string(),
  aud: z.string(),
  client_id: z.string(),
  scope: z.string(),
  iat: z.number().int(),
  exp: z.number().int(),
  // `<grant id>.<random>`: see grantIdOf.
  jti: z.string().regex(/^[\w-]+\.[\w-]+$/),
  model: z.string(),
});
export type AccessTokenClaims = z.infer<typeof claimsSchema>;

/** Access tokens are short JWTs; anything longer is not one of ours and is refused before parsing. */
const MAX_ACCESS_TOKEN_LENGTH = 4096;

/**
 * The jti names the grant the token hangs off (`<grant id>.<random>`), so checking a token
 * against revocation is one lookup by grant id. Grant ids are base64url, which has no dot.
 */
export function grantIdOf(jti: string): string {
  const dot = jti.indexOf('.');
  return dot < 0 ? jti : jti.slice(0, dot);
}

/*
 * HS256 itself is node:crypto's HMAC, computed in the request's own thread: jose's goes through
 * WebCrypto, an asynchronous job that cost twelve times as much, a quarter of a userinfo call's
 * CPU and a tenth of a refresh's (bench/README.md). Header and claims are decoded here as well, each
 * once: jose's decoders split and decode the whole token again for each part, on every check.
 */
const base64urlJson = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
/** A JWS part's JSON object; throws on anything else. */
function decodePart(part: string): Record<string, unknown> {
  const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString());
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new TypeError('not a JSON object');
  return value as Record<string, unknown>;
}
const hs256 = (key: Uint8Array, signingInput: string) => createHmac('sha256', key).update(signingInput).digest('base64url');

/** What signing and checking access tokens needs: the issuer, the lifetime and the keys. */
export interface TokenKeys {
  config: Config;
  keyring: Keyring;
}

/** Signs with the newest key of the keyring (RFC 9068 header and the claims docs/protocol.md lists). */
export function signAccessToken(services: TokenKeys, grant: GrantSubject) {
  const { config, keyring } = services;
  const iat = Math.floor(Date.now() / 1000);
  const expiresIn = config.ttl.accessToken;
  const claims: AccessTokenClaims = {
    iss: config.issuer,
    sub: grant.agent_id,
    aud: grant.client_id,
    client_id: grant.client_id,
    scope: grant.scope,
    iat,
    exp: iat + expiresIn,
    jti: `${grant.grant_id}.${randomToken(12)}`,
    model: grant.model,
  };
  const signingInput = `${base64urlJson({ alg: 'HS256', typ: 'at+jwt', kid: keyring.current.kid })}.${base64urlJson(claims)}`;
  return { token: `${signingInput}.${hs256(keyring.current.key, signingInput)}`, claims, expiresIn };
}

/**
 * Tokens whose signature, header and claims passed, by keyring. A keyring never changes while the
 * process runs and the issuer neither, so a token that passed once passes again until it expires:
 * the hot paths skip the HMAC and the decoding (docs/operations.md, "Grant cache"). Only tokens
 * that verified are kept, so a caller without a valid token cannot fill it. Bounded like the grant
 * cache, by GRANT_CACHE_SIZE (0: off).
 */
const verified = new WeakMap<Keyring, LRUCache<string, AccessTokenClaims>>();

function verifiedTokens({ config, keyring }: TokenKeys): LRUCache<string, AccessTokenClaims> | undefined {
  if (config.grantCacheSize === 0) return undefined;
  let tokens = verified.get(keyring);
  if (!tokens) verified.set(keyring, (tokens = new LRUCache({ max: config.grantCacheSize })));
  return tokens;
}

/**
 * Checks signature (by kid, so rotated-out keys still verify), alg, typ, iss and exp. Says nothing
 * about revocation: callers look the grant up in the store. Undefined for anything not valid. The
 * claims returned may be shared between calls: read them, never change them.
 */
export function verifyAccessToken(services: TokenKeys, token: string): AccessTokenClaims | undefined {
  const tokens = verifiedTokens(services);
  let claims = tokens?.get(token);
  if (!claims) {
    claims = checkAccessToken(services, token);
    if (claims) tokens?.set(token, claims);
  }
  return claims && claims.exp > Date.now() / 1000 ? claims : undefined;
}

/** The whole check but the expiry: signature, header, claims and issuer. */
function checkAccessToken(services: TokenKeys, token: string): AccessTokenClaims | undefined {
  if (token.length > MAX_ACCESS_TOKEN_LENGTH) return undefined;
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    const header = decodePart(parts[0]);
    // Exactly the header we sign: no other alg, no crit extensions, a kid we hold.
    if (header.alg !== 'HS256' || header.typ !== 'at+jwt' || header.crit !== undefined || typeof header.kid !== 'string') return undefined;
    const key = services.keyring.byKid.get(header.kid);
    if (!key) return undefined;
    // Compared as text: a signature spelt another way (padding, unused trailing bits) is refused.
    if (!safeEqual(hs256(key.key, `${parts[0]}.${parts[1]}`), parts[2])) return undefined;
    const claims = claimsSchema.safeParse(decodePart(parts[1]));
    if (!claims.success || claims.data.iss !== services.config.issuer) return undefined;
    return Object.freeze(claims.data);
  } catch {
    return undefined;
  }
}

/**
 * A valid token that is still live: its grant is neither revoked nor expired, its agent and client
 * are active and its jti was not revoked (one query). Carries the user's current email.
 */
export async function liveAccessToken(services: TokenKeys & { store: Store }, token: string) {
  const claims = verifyAccessToken(services, token);
  if (!claims) return undefined;
  const grant = await services.store.grants.findAccessGrant(grantIdOf(claims.jti), claims.jti);
  if (!grant || grant.agent_id !== claims.sub || grant.client_id !== claims.client_id) return undefined;
  return { claims, email: grant.email };
}
