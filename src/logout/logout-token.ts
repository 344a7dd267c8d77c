import { SignJWT } from 'jose';
import type { SigningAlg, SigningKeys } from '../oidc/signing-keys.js';
import { DEFAULT_SIGNING_ALG } from '../protocol/signing.js';

/** The event a logout token carries (OpenID Connect Back-Channel Logout 1.0 §2.4). */
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

/** How long a logout token is valid: long enough to arrive, short enough not to be replayed later. */
export const LOGOUT_TOKEN_LIFETIME_SECONDS = 120;

/** One delivery of the outbox, as the sender signs it. */
export interface LogoutTokenSubject {
  jti: string;
  client_id: string;
  agent_id: string;
  /** The grant's id: the `sid` its ID tokens carried. */
  sid: string;
  /** The website's registered ID token algorithm, null for none (RS256). */
  alg: SigningAlg | null;
}

/**
 * A logout token (Back-Channel Logout §2.4): signed like the website's ID tokens, typed
 * `logout+jwt`, never with a nonce. Signed anew at each attempt (a fresh iat and exp) under the
 * delivery's one jti, so that the website can tell a retry from a new logout.
 */
export async function signLogoutToken(keys: SigningKeys, issuer: string, subject: LogoutTokenSubject): Promise<string> {
  const { kid, alg, key } = await keys.current(subject.alg ?? DEFAULT_SIGNING_ALG);
  const iat = Math.floor(Date.now() / 1000);
  return new SignJWT({
    iss: issuer,
    aud: subject.client_id,
    iat,
    exp: iat + LOGOUT_TOKEN_LIFETIME_SECONDS,
    jti: subject.jti,
    sub: subject.agent_id,
    sid: subject.sid,
    events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
  })
    .setProtectedHeader({ alg, kid, typ: 'logout+jwt' })
    .sign(key);
}
