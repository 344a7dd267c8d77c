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

/** A proof that passed every check but the website's own demand of a nonce (src/dpop/proofs.ts, `demandNonce`). */
export interface AcceptedProof extends CheckedProof {
  /** Whether it carried a nonce of ours that is still good (§8). */
  nonced: boolean;
}

export interface DpopDeps {
  config: Pick<Config, 'issuer' | 'dpopNonce'>;
  store: Pick<Store, 'dpopProofs'>;
}

/**
 * Proofs recorded in the store in batches, so that a replay fails on every instance (RFC 9449 §11.1)
 * without a round trip per proof: at most one statement is in flight per process, and the proofs that
 * arrive meanwhile go together in the next one (bench/results/2026-11-28-hot-paths.md, "DPoP").
 */
class SharedSpends {
  private pending?: { hashes: string[]; until: number[]; spent: Promise<Set<string>>; settle(spent: Promise<Set<string>>): void };
  private flushing = false;

  constructor(private readonly store: Pick<Store, 'dpopProofs'>) {}

  /** Records `hash` until `until` (seconds since the epoch); false when some instance had recorded it already. */
  async spend(hash: string, until: number): Promise<boolean> {
    if (!this.pending) {
      let settle!: (spent: Promise<Set<string>>) => void;
      const spent = new Promise<Set<string>>((resolve) => (settle = resolve));
      this.pending = { hashes: [], until: [], spent, settle };
      if (!this.flushing) {
        this.flushing = true;
        // The next turn of the event loop: the proofs of requests parsed in this one join the batch.
        setImmediate(() => void this.flush());
      }
    }
    const batch = this.pending;
    batch.hashes.push(hash);
    batch.until.push(until);
    return (await batch.spent).has(hash);
  }

  private async flush() {
    while (this.pending) {
      const batch = this.pending;
      this.pending = undefined;
      const spent = this.store.dpopProofs.spend(batch.hashes, batch.until);
      batch.settle(spent);
      await spent.catch(() => undefined);
    }
    this.flushing = false;
  }
}

/**
 * The whole check of a DPoP header (RFC 9449 §4.3): the proof itself (src/dpop/proof.ts), the server
 * nonce (§8, §9) when DPOP_NONCE=on or the website asks for it (`demandNonce`), and replay (§11.1): a
 * proof is accepted once on every instance, this process's memory refusing its own replays at once.
 * One per process, on Services.
 */
export class DpopProofs {
  private readonly verifier: ProofVerifier;
  // Proofs this process accepted: a replay here is refused without asking the store.
  private readonly accepted: LRUCache<string, true>;
  private readonly shared: SharedSpends;

  constructor(
    private readonly deps: DpopDeps,
    private readonly nonces: DpopNonces,
    cacheSize: number,
  ) {
    this.verifier = new ProofVerifier(cacheSize);
    this.accepted = new LRUCache({ max: Math.max(1, cacheSize), ttl: (PROOF_MAX_AGE_SECONDS + PROOF_CLOCK_SKEW_SECONDS) * 1000 });
    this.shared = new SharedSpends(deps.store);
  }

  /** The nonce sent along every answer to a request with a proof (`DPoP-Nonce`, §8.2). */
  nonce(): string {
    return this.nonces.current(Date.now() / 1000);
  }

  private refusal(request: ProofRequest, error: string, description: string) {
    return new DpopRefused(error, description, {
      resource: request.accessToken === undefined ? undefined : { algs: DPOP_ALGS_CHALLENGE },
      nonce: this.nonce(),
    });
  }

  /**
   * The proof in `header` (the request's DPoP header) if it is good for `request`; undefined when there
   * is none. Throws DpopRefused: `invalid_dpop_proof`, or `use_dpop_nonce` with a fresh nonce.
   */
  async check(header: string | string[] | undefined, request: ProofRequest): Promise<AcceptedProof | undefined> {
    if (header === undefined) return undefined;
    // Node joins a repeated header with ", ", which no JWT contains.
    if (Array.isArray(header) || header.includes(',')) throw this.refusal(request, 'invalid_dpop_proof', 'send exactly one DPoP header');
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
      if (err instanceof ProofProblem) throw this.refusal(request, 'invalid_dpop_proof', err.message);
      throw err;
    }
    const accepted = { ...proof, nonced: proof.nonce !== undefined && this.nonces.accepts(proof.nonce, now) };
    if (this.deps.config.dpopNonce) this.demandNonce(accepted, request);
    const key = `${proof.jkt}.${proof.jti}`;
    const replayed = () => this.refusal(request, 'invalid_dpop_proof', 'this DPoP proof was used already: make a new one for every request');
    if (this.accepted.has(key)) throw replayed();
    this.accepted.set(key, true);
    if (!(await this.shared.spend(sha256(key), proof.iat + PROOF_MAX_AGE_SECONDS + PROOF_CLOCK_SKEW_SECONDS))) throw replayed();
    return accepted;
  }

  /** Refuses `proof` with `use_dpop_nonce` unless it carried a good nonce: the website (or the deployment) demands one. */
  demandNonce(proof: AcceptedProof, request: ProofRequest): void {
    if (!proof.nonced) throw this.refusal(request, 'use_dpop_nonce', 'the DPoP proof must carry the nonce this server gave in DPoP-Nonce');
  }
}
