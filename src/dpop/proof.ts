import { constants, createPublicKey, type KeyObject, verify } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { sha256 } from '../crypto/secrets.js';

/**
 * The proof algorithms accepted, as `dpop_signing_alg_values_supported` lists them (RFC 9449 §5.1).
 * Ed25519 is EdDSA's fully-specified name (RFC 9864), which oauth4webapi signs with.
 */
export const DPOP_ALGS = ['ES256', 'EdDSA', 'Ed25519', 'RS256', 'PS256'] as const;
export type DpopAlg = (typeof DPOP_ALGS)[number];

/** How old a proof may be, and how far ahead of our clock its `iat` may run (docs/protocol.md, "DPoP"). */
export const PROOF_MAX_AGE_SECONDS = 60;
export const PROOF_CLOCK_SKEW_SECONDS = 5;

// A proof is a short JWS; anything longer is refused before it is parsed (an RSA 4096 key fits twice).
const MAX_PROOF_LENGTH = 8192;
const MAX_JTI_LENGTH = 256;
const MIN_RSA_BITS = 2048;

// Members only a private or symmetric JWK has (RFC 7518 §6): a proof carrying one is refused (§4.3).
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

const ED25519 = {
  kty: 'OKP',
  crv: 'Ed25519',
  members: ['crv', 'kty', 'x'],
  check: (key: KeyObject, data: Buffer, signature: Buffer) => verify(null, data, key, signature),
};

/** Per algorithm: the key type it needs, the members of the RFC 7638 thumbprint, and the check of a signature. */
const ALGORITHMS: Record<DpopAlg, { kty: string; crv?: string; members: string[]; check(key: KeyObject, data: Buffer, signature: Buffer): boolean }> =
  {
    ES256: {
      kty: 'EC',
      crv: 'P-256',
      members: ['crv', 'kty', 'x', 'y'],
      check: (key, data, signature) => verify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, signature),
    },
    EdDSA: ED25519,
    Ed25519: ED25519,
    RS256: { kty: 'RSA', members: ['e', 'kty', 'n'], check: (key, data, signature) => verify('sha256', data, key, signature) },
    PS256: {
      kty: 'RSA',
      members: ['e', 'kty', 'n'],
      check: (key, data, signature) => verify('sha256', data, { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: 32 }, signature),
    },
  };

/** Why a proof was refused: the route turns it into `invalid_dpop_proof` (RFC 9449 §5, §7.1). */
export class ProofProblem extends Error {}

/** What a proof that passed says: its key's thumbprint, its id, when it was made and the nonce it carried. */
export interface CheckedProof {
  /** RFC 7638 SHA-256 thumbprint of the proof's key: what tokens are bound to (`cnf.jkt`, §6.1). */
  jkt: string;
  jti: string;
  iat: number;
  nonce?: string;
}

/** The request a proof must be for. */
export interface ProofTarget {
  method: string;
  /** The endpoint's URL as clients know it (issuer and path), compared without query and fragment. */
  url: string;
  /** At a resource (§7.1): the access token presented, whose hash the proof must carry (`ath`). */
  accessToken?: string;
  /** Seconds since the epoch. */
  now: number;
}

/** RFC 7638: the thumbprint over the key type's required members, in lexical order. */
export function jwkThumbprint(jwk: Record<string, unknown>, members: string[]): string {
  return sha256(JSON.stringify(Object.fromEntries(members.map((m) => [m, jwk[m]]))));
}

// RFC 3986 §6.2.2: hex digits in upper case, and unreserved characters never percent-encoded.
const normalisePercent = (path: string) =>
  path.replace(/%[0-9a-fA-F]{2}/g, (escape) => {
    const char = String.fromCharCode(Number.parseInt(escape.slice(1), 16));
    return /[A-Za-z0-9\-._~]/.test(char) ? char : escape.toUpperCase();
  });

/**
 * An http(s) URL without query and fragment, normalised (RFC 9449 §4.3 step 9, RFC 3986 §6.2.2 and
 * §6.2.3): the URL parser lowers scheme and host, drops a default port and resolves dot segments.
 */
export function normaliseHtu(value: string): string | undefined {
  if (!URL.canParse(value)) return undefined;
  const url = new URL(value);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  return `${url.protocol}//${url.host}${normalisePercent(url.pathname)}`;
}

const isString = (value: unknown): value is string => typeof value === 'string';

/** A proof's header once checked: its key's thumbprint, the key, and the check of a signature by it. */
interface CheckedHeader {
  jkt: string;
  key: KeyObject;
  verify(key: KeyObject, data: Buffer, signature: Buffer): boolean;
}

/**
 * Checks DPoP proofs (RFC 9449 §4.3) but for the nonce and replay, which need the server's state
 * (src/dpop/proofs.ts). A client's proofs share one header (typ, alg and its key), so each header is
 * checked and its key parsed once: an LRU of `cacheSize` keyed by the encoded header. What varies per
 * proof, the claims and the signature, is checked every time.
 */
export class ProofVerifier {
  private readonly headers: LRUCache<string, CheckedHeader>;

  constructor(cacheSize: number) {
    this.headers = new LRUCache({ max: Math.max(1, cacheSize) });
  }

  /** The proof's claims if it is a well-formed proof for `target`, signed by the key it carries; throws ProofProblem otherwise. */
  check(proof: string, target: ProofTarget): CheckedProof {
    if (proof.length > MAX_PROOF_LENGTH) throw new ProofProblem('the proof is too long');
    const parts = proof.split('.');
    if (parts.length !== 3 || !parts.every((p) => /^[\w-]+$/.test(p))) throw new ProofProblem('the proof is not a JWT');
    const [encodedHeader, encodedClaims, signature] = parts;
    let header = this.headers.get(encodedHeader);
    if (!header) {
      header = checkHeader(decodePart(encodedHeader));
      this.headers.set(encodedHeader, header);
    }
    const { jti, htm, htu, iat, ath, nonce } = decodePart(encodedClaims);
    if (!isString(jti) || jti.length === 0 || jti.length > MAX_JTI_LENGTH)
      throw new ProofProblem(`the proof's jti must be 1 to ${MAX_JTI_LENGTH} characters`);
    if (htm !== target.method) throw new ProofProblem(`the proof's htm must be ${target.method}`);
    // Clients usually send the URL as we spell it: the exact match spares parsing both.
    if (!isString(htu) || (htu !== target.url && normaliseHtu(htu) !== normaliseHtu(target.url)))
      throw new ProofProblem(`the proof's htu must be ${target.url}`);
    if (typeof iat !== 'number' || !Number.isInteger(iat)) throw new ProofProblem("the proof's iat must be a number of seconds");
    if (iat < target.now - PROOF_MAX_AGE_SECONDS) throw new ProofProblem(`the proof is older than ${PROOF_MAX_AGE_SECONDS} seconds`);
    if (iat > target.now + PROOF_CLOCK_SKEW_SECONDS) throw new ProofProblem("the proof's iat is in the future");
    if (target.accessToken !== undefined && ath !== sha256(target.accessToken)) {
      throw new ProofProblem("the proof's ath must be the SHA-256 hash of the access token");
    }
    if (nonce !== undefined && !isString(nonce)) throw new ProofProblem("the proof's nonce must be a string");
    // The signature last: the one costly step, spared to proofs that fail the checks above.
    if (!header.verify(header.key, Buffer.from(`${encodedHeader}.${encodedClaims}`), Buffer.from(signature, 'base64url'))) {
      throw new ProofProblem("the proof's signature does not verify");
    }
    return { jkt: header.jkt, jti, iat, nonce };
  }
}

/** A JSON object in base64url, as a JWT's header and claims are. */
function decodePart(part: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(part, 'base64url').toString());
  } catch {
    throw new ProofProblem('the proof is not a JWT');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ProofProblem('the proof is not a JWT');
  return value as Record<string, unknown>;
}

/** Checks a proof's header (typ, alg, crit, and the key against the algorithm); returns what checking its signature needs. */
function checkHeader(header: Record<string, unknown>): CheckedHeader {
  if (header.typ !== 'dpop+jwt') throw new ProofProblem('the proof\'s typ must be "dpop+jwt"');
  const alg = header.alg as DpopAlg;
  if (!isString(alg) || !Object.hasOwn(ALGORITHMS, alg)) throw new ProofProblem(`the proof's alg must be one of ${DPOP_ALGS.join(', ')}`);
  if (header.crit !== undefined) throw new ProofProblem('the proof must not carry crit');
  const jwk = header.jwk as Record<string, unknown>;
  if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) throw new ProofProblem('the proof must carry its public key as jwk');
  const algorithm = ALGORITHMS[alg];
  if (PRIVATE_MEMBERS.some((m) => Object.hasOwn(jwk, m))) throw new ProofProblem('the proof must carry a public key, never a private one');
  if (jwk.kty !== algorithm.kty || (algorithm.crv !== undefined && jwk.crv !== algorithm.crv)) {
    throw new ProofProblem(`the proof's key does not fit ${alg}`);
  }
  if (!algorithm.members.every((m) => isString(jwk[m]))) throw new ProofProblem("the proof's key is incomplete");
  let key: KeyObject;
  try {
    key = createPublicKey({ key: Object.fromEntries(algorithm.members.map((m) => [m, jwk[m]])), format: 'jwk' });
  } catch {
    throw new ProofProblem("the proof's key is not a valid public key");
  }
  if (algorithm.kty === 'RSA' && (key.asymmetricKeyDetails?.modulusLength ?? 0) < MIN_RSA_BITS) {
    throw new ProofProblem(`the proof's RSA key must have at least ${MIN_RSA_BITS} bits`);
  }
  return { jkt: jwkThumbprint(jwk, algorithm.members), key, verify: algorithm.check };
}
