import { createHmac } from 'node:crypto';
import { z } from 'zod';
import type { Config } from '../config.js';
import type { Keyring } from '../crypto/keyring.js';
import { randomToken, safeEqual } from '../crypto/secrets.js';
import type { GrantSubject } from '../store/grants.js';

export const claimsSchema = z.object({
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
  // A DPoP-bound token (RFC 9449 §6.1): the thumbprint of the key its holder must prove.
  cnf: z.strictObject({ jkt: z.string() }).optional(),
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
  config: Pick<Config, 'issuer' | 'ttl'>;
  keyring: Keyring;
}

/** What an access token is signed from: its grant, and the DPoP key it is bound to, if any. */
export type BoundGrantSubject = GrantSubject & { dpop_jkt?: string };

/**
 * Signs with the newest key of the keyring (RFC 9068 header and the claims docs/protocol.md lists).
 * `jtiSuffix`: the random part of the jti, when the caller had to know it beforehand.
 */
export function signAccessToken({ config, keyring }: TokenKeys, grant: BoundGrantSubject, jtiSuffix = randomToken(12)) {
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
    jti: `${grant.grant_id}.${jtiSuffix}`,
    model: grant.model,
    ...(grant.dpop_jkt ? { cnf: { jkt: grant.dpop_jkt } } : {}),
  };
  const signingInput = `${base64urlJson({ alg: 'HS256', typ: 'at+jwt', kid: keyring.current.kid })}.${base64urlJson(claims)}`;
  return { token: `${signingInput}.${hs256(keyring.current.key, signingInput)}`, claims, expiresIn };
}

/**
 * The whole check but the expiry: signature (by kid, so rotated-out keys still verify), alg, typ,
 * claims and issuer. Says nothing about revocation. Undefined for anything not valid; the claims
 * are frozen, as callers may share them (src/tokens/verified-access-tokens.ts).
 */
export function checkAccessToken(keys: TokenKeys, token: string): AccessTokenClaims | undefined {
  if (token.length > MAX_ACCESS_TOKEN_LENGTH) return undefined;
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  try {
    const header = decodePart(parts[0]);
    // Exactly the header we sign: no other alg, no crit extensions, a kid we hold.
    if (header.alg !== 'HS256' || header.typ !== 'at+jwt' || header.crit !== undefined || typeof header.kid !== 'string') return undefined;
    const key = keys.keyring.byKid.get(header.kid);
    if (!key) return undefined;
    // Compared as text: a signature spelt another way (padding, unused trailing bits) is refused.
    if (!safeEqual(hs256(key.key, `${parts[0]}.${parts[1]}`), parts[2])) return undefined;
    const claims = claimsSchema.safeParse(decodePart(parts[1]));
    if (!claims.success || claims.data.iss !== keys.config.issuer) return undefined;
    return Object.freeze(claims.data);
  } catch {
    return undefined;
  }
}
