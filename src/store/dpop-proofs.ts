import type { Db } from '../db/types.js';

/** DPoP proofs already accepted (RFC 9449 §11.1), shared by every instance (migrations/080). */
export function createDpopProofStore(db: Db) {
  return {
    /**
     * Records a proof (`proofHash`: a digest of its key and jti) until `keepUntil`; false when it was
     * recorded already, by whichever instance saw it first: a replay.
     */
    async spend(proofHash: string, keepUntil: Date): Promise<boolean> {
      const { rowCount } = await db.query(`INSERT INTO dpop_proofs (proof_hash, expires_at) VALUES ($1, $2) ON CONFLICT (proof_hash) DO NOTHING`, [
        proofHash,
        keepUntil,
      ]);
      return rowCount === 1;
    },
  };
}
