import { decodeProtectedHeader, importJWK, jwtVerify } from 'jose';
import type { Config } from '../config.js';
import { AGENT_ASSERTION } from '../protocol/sign-in.js';
import { idText } from '../protocol/text.js';
import type { AssertionFailure } from '../store/audit-log.js';
import type { Store } from '../store/index.js';

/**
 * Agent assertions (docs/protocol.md, "Agent assertions"): a short JWT the agent signs with one of
 * its registered keys in place of its secret. The check says only whether it holds and, if not,
 * why; the caller answers every failure alike and keeps the reason for the audit log.
 */

export interface AssertionDeps {
  config: Pick<Config, 'issuer'>;
  store: Pick<Store, 'agentKeys'>;
}

const { type, maxLifetimeSeconds, clockSkewSeconds } = AGENT_ASSERTION;
const idPattern = idText();

/** The key id an assertion's header names, if it is one of ours and the header is as required. */
function headerKid(assertion: string): string | undefined {
  try {
    const header = decodeProtectedHeader(assertion);
    // Exactly this typ: no media-type shortening, no other case (RFC 8725 §3.11).
    if (header.typ !== type || typeof header.kid !== 'string' || !idPattern.safeParse(header.kid).success) return undefined;
    return header.kid;
  } catch {
    return undefined;
  }
}

/** The agent an assertion proved, as far as the sign-in needs it. */
export interface AssertedAgent {
  email_verified: boolean;
}

/**
 * Checks an assertion for `agentId` and `requestId` and spends its jti; the agent when it holds,
 * else the reason. Signature first: nothing of an unsigned claim is trusted or spent.
 */
export async function checkAssertion(
  { config, store }: AssertionDeps,
  { assertion, agentId, requestId }: { assertion: string; agentId: string; requestId: string },
): Promise<AssertionFailure | AssertedAgent> {
  const kid = headerKid(assertion);
  if (!kid) return 'malformed_assertion';
  const subject = await store.agentKeys.subject(agentId, kid);
  if (!subject) return 'unknown_agent';
  if (!subject.key) return 'unknown_key';

  let claims;
  try {
    const key = await importJWK(subject.key.jwk, subject.key.alg);
    // Expiry is checked here, with the skew allowed; the header's alg must be the key's own.
    ({ payload: claims } = await jwtVerify(assertion, key, { algorithms: [subject.key.alg], clockTolerance: clockSkewSeconds }));
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED') return 'wrong_key';
    return code === 'ERR_JWT_EXPIRED' ? 'assertion_expired' : 'malformed_assertion';
  }

  const { iss, sub, aud, iat, exp, jti } = claims;
  if (typeof iat !== 'number' || typeof exp !== 'number' || typeof jti !== 'string' || jti.length === 0 || jti.length > 200) {
    return 'malformed_assertion';
  }
  if (iss !== agentId || sub !== agentId) return 'agent_mismatch';
  if (aud !== config.issuer) return 'wrong_audience';
  if (claims.request_id !== requestId) return 'wrong_request';
  if (exp <= iat) return 'malformed_assertion';
  if (exp - iat > maxLifetimeSeconds) return 'assertion_too_long';
  if (iat > Date.now() / 1000 + clockSkewSeconds) return 'assertion_not_yet_valid';
  if (!subject.active) return 'inactive_agent';
  // Spent until no instance would accept it any more: its expiry plus the skew.
  const spent = await store.agentKeys.spend(agentId, kid, jti, new Date((exp + clockSkewSeconds) * 1000));
  return spent ? { email_verified: subject.email_verified } : 'assertion_replayed';
}
