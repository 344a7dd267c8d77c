/**
 * DPoP at a resource server (RFC 9449 §7): the check of a request that presents a DPoP-bound access
 * token (`Authorization: DPoP <token>`) with its proof (`DPoP: <proof JWT>`).
 */
import { base64url, calculateJwkThumbprint, decodeProtectedHeader, EmbeddedJWK, type JWK, jwtVerify } from 'jose';

/** The algorithms agent-auth accepts for proofs (its `dpop_signing_alg_values_supported`). */
export const DPOP_ALGORITHMS = ['ES256', 'EdDSA', 'Ed25519', 'RS256', 'PS256'];

/** A refused request: answer `status` with the `WWW-Authenticate` header `challenge` and `{error, error_description}`. */
export class DpopError extends Error {
  readonly status = 401;
  readonly challenge: string;

  constructor(
    readonly error: 'invalid_token' | 'invalid_dpop_proof',
    description: string,
  ) {
    super(description);
    this.name = 'DpopError';
    this.challenge = `DPoP error="${error}", error_description="${description}", algs="${DPOP_ALGORITHMS.join(' ')}"`;
  }
}

/** Proofs already accepted, so that each is accepted once (RFC 9449 §11.1). */
export interface ProofReplayCache {
  /** Records `key` until `expiresAt` (ms since the epoch); false when it was recorded already. */
  add(key: string, expiresAt: number): boolean | Promise<boolean>;
}

/** A replay cache in this process's memory: enough for one instance; several instances need a shared one. */
export function memoryReplayCache(): ProofReplayCache {
  const seen = new Map<string, number>();
  return {
    add(key, expiresAt) {
      const now = Date.now();
      if ((seen.get(key) ?? 0) > now) return false;
      // Forget what has expired now and then, so the map stays as small as the window.
      if (seen.size > 1000) for (const [k, until] of seen) if (until <= now) seen.delete(k);
      seen.set(key, expiresAt);
      return true;
    },
  };
}

const defaultReplayCache = memoryReplayCache();

export interface VerifyDpopOptions {
  /** The request's method, as the client sent it. */
  method: string;
  /** The request's URL as the client addressed it (behind a proxy: the public one); query and fragment are ignored. */
  url: string | URL;
  /** The request's Authorization header. */
  authorization: string | null | undefined;
  /** The request's DPoP header. */
  proof: string | null | undefined;
  /** The access token's claims, once its signature and expiry are checked: `cnf.jkt` names the key. */
  claims: { cnf?: unknown };
  /** How old a proof may be; default 60 seconds, as agent-auth's own endpoints. */
  maxAgeSeconds?: number;
  /** How far ahead of this clock a proof's `iat` may be; default 5 seconds. */
  clockSkewSeconds?: number;
  /** Where accepted proofs are remembered; default: this process's memory. */
  replayCache?: ProofReplayCache;
}

const sha256 = async (value: string) => base64url.encode(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(value))));

/** A URL without query and fragment; the URL parser lowers scheme and host and drops a default port. */
function htu(value: string | URL): string | undefined {
  try {
    const url = new URL(value);
    return `${url.protocol}//${url.host}${url.pathname}`;
  } catch {
    return undefined;
  }
}

/**
 * Checks a request that carries a DPoP-bound access token (RFC 9449 §7.1): the DPoP scheme, one proof
 * signed with the key the token is bound to (its thumbprint is `cnf.jkt`), for this method and URL
 * (`htm`, `htu`), for this token (`ath`), recent (`iat`) and never seen before (`jti`). Returns the
 * key's thumbprint; throws DpopError. Verify the access token itself first.
 */
export async function verifyDpop(options: VerifyDpopOptions): Promise<{ jkt: string }> {
  const { maxAgeSeconds = 60, clockSkewSeconds = 5, replayCache = defaultReplayCache } = options;
  const match = /^DPoP +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(options.authorization ?? '');
  if (!match) throw new DpopError('invalid_token', 'present the access token as "Authorization: DPoP <token>"');
  const { cnf } = options.claims;
  const jkt = typeof cnf === 'object' && cnf !== null ? (cnf as { jkt?: unknown }).jkt : undefined;
  if (typeof jkt !== 'string') throw new DpopError('invalid_token', 'the access token is not bound to a DPoP key');
  const { proof } = options;
  if (!proof || proof.includes(',')) throw new DpopError('invalid_dpop_proof', 'send exactly one DPoP proof');

  const invalid = () => new DpopError('invalid_dpop_proof', 'the DPoP proof is not a valid proof signed by the key it carries');
  let jwk: JWK | undefined;
  try {
    jwk = decodeProtectedHeader(proof).jwk;
  } catch {
    throw invalid();
  }
  // The key must be public: a header carrying a private one is refused (RFC 9449 §4.3).
  if (jwk && ('d' in jwk || 'k' in jwk)) throw new DpopError('invalid_dpop_proof', 'the DPoP proof must carry a public key, never a private one');
  const payload = await jwtVerify(proof, EmbeddedJWK, { typ: 'dpop+jwt', algorithms: DPOP_ALGORITHMS }).then(
    (verified) => verified.payload,
    () => Promise.reject(invalid()),
  );
  const now = Math.floor(Date.now() / 1000);
  const { jti, htm, iat, ath } = payload;
  if (typeof jti !== 'string' || jti.length === 0) throw new DpopError('invalid_dpop_proof', 'the DPoP proof has no jti');
  if (htm !== options.method) throw new DpopError('invalid_dpop_proof', `the DPoP proof is not for ${options.method}`);
  if (typeof payload.htu !== 'string' || htu(payload.htu) !== htu(options.url))
    throw new DpopError('invalid_dpop_proof', 'the DPoP proof is for another URL');
  if (typeof iat !== 'number' || iat < now - maxAgeSeconds || iat > now + clockSkewSeconds) {
    throw new DpopError('invalid_dpop_proof', 'the DPoP proof is too old, or from the future');
  }
  if (ath !== (await sha256(match[1]))) throw new DpopError('invalid_dpop_proof', 'the DPoP proof is not for this access token');
  const proofJkt = await calculateJwkThumbprint(jwk as JWK);
  if (proofJkt !== jkt) throw new DpopError('invalid_dpop_proof', 'the DPoP proof is not signed with the key the access token is bound to');
  if (!(await replayCache.add(`${proofJkt}.${jti}`, (iat + maxAgeSeconds + clockSkewSeconds) * 1000))) {
    throw new DpopError('invalid_dpop_proof', 'the DPoP proof was used already');
  }
  return { jkt };
}
