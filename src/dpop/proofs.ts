import { LRUCache } from 'lru-cache';
import type { Config } from '../config.js';
import { sha256 } from '../crypto/secrets.js';
import { DpopRefused } from '../errors.js';
import type { Store } from '../store/index.js';
import type { DpopNonces } from './nonces.js';
import { type CheckedProof, DPOP_ALGS, PROOF_CLOCK_SKEW_SECONDS, PROOF_MAX_AGE_SECONDS, ProofProblem, ProofVerifier } from './proof.js';

/** The `algs` of the DPoP challenge (RFC 9449 §7.1). */
export const DPOP_ALGS_CHALLENGE = DPOP_ALGS.join(' ');

/** Where a proof is presented: the path on the issuer, and at a resource the access token it goes with (§7). */
export interface ProofRequest {
  method: string;
  path: string;
  accessToken?: string;
}

export interface DpopDeps {
  config: Pick<Config, 'issuer' | 'dpopNonce'>;
  store: Pick<Store, 'dpopProofs'>;
}

/**
 * The whole check of a DPoP header (RFC 9449 §4.3): the proof itself (src/dpop/proof.ts), the server
 * nonce when DPOP_NONCE=on (§8, §9), and replay (§11.1): a proof is accepted once: at /token on every
 * instance, at a resource on this one.
 * One per process, on Services.
 */
export class DpopProofs {
  private readonly verifier: ProofVerifier;
  // Proofs this process accepted: a replay here is refused without asking the store.
  private readonly accepted: LRUCache<string, true>;

  constructor(
    private readonly deps: DpopDeps,
    /** Present when DPOP_NONCE=on. */
    private readonly nonces: DpopNonces | undefined,
    cacheSize: number,
  ) {
    this.verifier = new ProofVerifier(cacheSize);
    this.accepted = new LRUCache({ max: Math.max(1, cacheSize), ttl: (PROOF_MAX_AGE_SECONDS + PROOF_CLOCK_SKEW_SECONDS) * 1000 });
  }

  /** The nonce to send along a response to a DPoP request (`DPoP-Nonce`, §8.2), when nonces are demanded. */
  nonce(): string | undefined {
    return this.nonces?.current(Date.now() / 1000);
  }

  /**
   * The proof in `header` (the request's DPoP header) if it is good for `request`; undefined when there
   * is none. Throws DpopRefused: `invalid_dpop_proof`, or `use_dpop_nonce` with a fresh nonce.
   */
  async check(header: string | string[] | undefined, request: ProofRequest): Promise<CheckedProof | undefined> {
    if (header === undefined) return undefined;
    const refused = (error: string, description: string) =>
      new DpopRefused(error, description, {
        resource: request.accessToken === undefined ? undefined : { algs: DPOP_ALGS_CHALLENGE },
        nonce: this.nonce(),
      });
    // Node joins a repeated header with ", ", which no JWT contains.
    if (Array.isArray(header) || header.includes(',')) throw refused('invalid_dpop_proof', 'send exactly one DPoP header');
    const now = Date.now() / 1000;
    let proof: CheckedProof;
    try {
      proof = this.verifier.check(header, {
        method: request.method,
        url: `${this.deps.config.issuer}${request.path}`,
        accessToken: request.accessToken,
        now,
      });
    } catch (err) {
      if (err instanceof ProofProblem) throw refused('invalid_dpop_proof', err.message);
      throw err;
    }
    if (this.nonces && (proof.nonce === undefined || !this.nonces.accepts(proof.nonce, now))) {
      throw refused('use_dpop_nonce', 'the DPoP proof must carry the nonce this server gave in DPoP-Nonce');
    }
    const key = sha256(`${proof.jkt}.${proof.jti}`);
    const keepUntil = new Date((proof.iat + PROOF_MAX_AGE_SECONDS + PROOF_CLOCK_SKEW_SECONDS) * 1000);
    // Tokens are issued on a proof accepted once on every instance (the store). At a resource, this
    // process's memory only: a store round trip cost /userinfo six times its CPU (bench/results/2026-11-28-dpop.md),
    // and a replay there needs the token and a proof for it, captured, and yields what /userinfo shows, for a minute.
    const shared = request.accessToken === undefined;
    if (this.accepted.has(key) || (shared && !(await this.deps.store.dpopProofs.spend(key, keepUntil)))) {
      throw refused('invalid_dpop_proof', 'this DPoP proof was used already: make a new one for every request');
    }
    this.accepted.set(key, true);
    return proof;
  }
}
