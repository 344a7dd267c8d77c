import { randomBytes } from 'node:crypto';
import { jwtVerify, SignJWT, type JWTHeaderParameters } from 'jose';
import { z } from 'zod';
import type { Services } from '../services.js';
import type { GrantSubject } from '../store/grants.js';

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
function grantIdOf(jti: string): string {
  return jti.split('.')[0];
}

/** Signs with the newest key of the keyring (RFC 9068 header and the claims decisions.md fixes). */
export async function signAccessToken(services: Services, grant: GrantSubject) {
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
    jti: `${grant.grant_id}.${randomBytes(12).toString('base64url')}`,
    model: grant.model,
  };
  const token = await new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'at+jwt', kid: keyring.current.kid })
    .sign(await keyring.current.cryptoKey);
  return { token, claims, expiresIn };
}

/**
 * Checks signature (by kid, so rotated-out keys still verify), alg, typ, iss and exp. Says nothing
 * about revocation: callers look the grant up in the store. Undefined for anything not valid.
 */
export async function verifyAccessToken(services: Services, token: string): Promise<AccessTokenClaims | undefined> {
  if (token.length > MAX_ACCESS_TOKEN_LENGTH) return undefined;
  const keyFor = (header: JWTHeaderParameters) => {
    const key = header.kid === undefined ? undefined : services.keyring.byKid.get(header.kid);
    if (!key) throw new Error('unknown signing key');
    return key.cryptoKey;
  };
  try {
    const { payload } = await jwtVerify(token, keyFor, {
      issuer: services.config.issuer,
      algorithms: ['HS256'],
      typ: 'at+jwt',
      requiredClaims: ['exp', 'iat', 'sub', 'jti'],
    });
    const claims = claimsSchema.safeParse(payload);
    return claims.success ? claims.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A valid token that is still live: its grant is neither revoked nor expired, its agent and client
 * are active and its jti was not revoked (one query). Carries the user's current email.
 */
export async function liveAccessToken(services: Services, token: string) {
  const claims = await verifyAccessToken(services, token);
  if (!claims) return undefined;
  const grant = await services.store.grants.findAccessGrant(grantIdOf(claims.jti), claims.jti);
  if (!grant || grant.agent_id !== claims.sub || grant.client_id !== claims.client_id) return undefined;
  return { claims, email: grant.email };
}
