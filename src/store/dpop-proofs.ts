import type { Db } from '../db/types.js';

/** DPoP proofs already accepted (RFC 9449 §11.1), shared by every instance (migrations/080). */
export function createDpopProofStore(db: Db) {
  return {
    /**
     * Records proofs (`proofHashes`: digests of their key and jti), each until its `keepUntil` (seconds
     * since the epoch), in one statement; returns those recorded now. One missing was recorded already,
     * by whichever instance saw it first: a replay.
     */
    async spend(proofHashes: string[], keepUntil: number[]): Promise<Set<string>> {
      const { rows } = await db.query<{ proof_hash: string }>(
        `INSERT INTO dpop_proofs (proof_hash, expires_at)
         SELECT h, to_timestamp(u) FROM unnest($1::text[], $2::float8[]) AS p(h, u)
         ON CONFLICT (proof_hash) DO NOTHING RETURNING proof_hash`,
        [proofHashes, keepUntil],
      );
      return new Set(rows.map((r) => r.proof_hash));
    },
  };
}
