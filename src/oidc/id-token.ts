import { createHash } from 'node:crypto';
import { SignJWT } from 'jose';
import type { Config } from '../config.js';
import { scopeGrantsEmail } from '../oauth/scopes.js';
import { DEFAULT_SIGNING_ALG } from '../protocol/signing.js';
import type { SigningAlg, SigningKeys } from './signing-keys.js';

/** The sign-in an ID token tells of, as the code exchange read it (OpenID Connect Core §2). */
export interface SignIn {
  /** The grant it began: its id is the session id (`sid`) a logout token names (OpenID Connect Back-Channel Logout §2.1). */
  grant_id: string;
  agent_id: string;
  client_id: string;
  scope: string;
  model: string;
  /** Seconds since the epoch: when the agent authenticated (null: not known any more). */
  auth_time: number | null;
  nonce: string | null;
  email: string;
  email_verified: boolean;
  /** The website's registered id_token_signed_response_alg, null for none (RS256). */
  id_token_signed_response_alg: SigningAlg | null;
}

// OpenID Connect Core §3.1.3.6: the hash the alg's signature uses; for Ed25519 that is SHA-512.
const AT_HASH: Record<SigningAlg, string> = { RS256: 'sha256', ES256: 'sha256', EdDSA: 'sha512' };

/** at_hash: the left half of the access token's hash, base64url (OpenID Connect Core §3.1.3.6). */
function atHash(alg: SigningAlg, accessToken: string): string {
  const digest = createHash(AT_HASH[alg]).update(accessToken, 'ascii').digest();
  return digest.subarray(0, digest.length / 2).toString('base64url');
}

/**
 * The ID token of a code exchange whose scope holds `openid`. The email goes wherever /userinfo
 * would share it; email_verified is true only once the owner has used a sign-in link sent to that
 * address (src/owners/email-link.ts): an address an operator typed in proves nothing (docs/interop.md).
 */
export async function signIdToken(keys: SigningKeys, config: Pick<Config, 'issuer' | 'ttl'>, signIn: SignIn, accessToken: string): Promise<string> {
  const { kid, alg, key } = await keys.current(signIn.id_token_signed_response_alg ?? DEFAULT_SIGNING_ALG);
  const iat = Math.floor(Date.now() / 1000);
  const claims = {
    iss: config.issuer,
    sub: signIn.agent_id,
    aud: signIn.client_id,
    azp: signIn.client_id,
    iat,
    // As long as the access token issued with it.
    exp: iat + config.ttl.accessToken,
    ...(signIn.auth_time === null ? {} : { auth_time: signIn.auth_time }),
    ...(signIn.nonce === null ? {} : { nonce: signIn.nonce }),
    at_hash: atHash(alg, accessToken),
    sid: signIn.grant_id,
    ...(scopeGrantsEmail(signIn.scope) ? { email: signIn.email, email_verified: signIn.email_verified } : {}),
    model: signIn.model,
  };
  return new SignJWT(claims).setProtectedHeader({ alg, kid, typ: 'JWT' }).sign(key);
}
