import { generateId } from '../crypto/secrets.js';
import type { Db } from '../db/types.js';

/** A passkey as its owner sees it. */
export interface Passkey {
  id: string;
  name: string;
  created_at: Date;
  last_used_at: Date | null;
}

/** What checking an assertion needs of the credential it names. */
export interface StoredCredential {
  id: string;
  user_id: string;
  credential_id: string;
  public_key: Uint8Array;
  counter: number;
  transports: string[];
}

export type ChallengePurpose = 'registration' | 'sign_in' | 'approval' | 'reauthentication';

/**
 * Who a spent challenge was issued to: an owner (registration, approval, reauthentication), a
 * sign-in (approval), an owner session (reauthentication: the session it makes fresh).
 */
export interface IssuedChallenge {
  user_id: string | null;
  request_id: string | null;
  session_hash: string | null;
}

const PASSKEY = `id, name, created_at, last_used_at`;

/** Owners' passkeys and the WebAuthn challenges issued for them (migrations/030). */
export function createPasskeyStore(db: Db) {
  return {
    async list(userId: string): Promise<Passkey[]> {
      const { rows } = await db.query<Passkey>(`SELECT ${PASSKEY} FROM owner_passkeys WHERE user_id = $1 ORDER BY created_at, id`, [userId]);
      return rows;
    },

    async count(userId: string): Promise<number> {
      const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM owner_passkeys WHERE user_id = $1`, [userId]);
      return rows[0].n;
    },

    /** The owner's credential ids, for the authenticator to skip (excludeCredentials) or pick from. */
    async credentials(userId: string): Promise<Pick<StoredCredential, 'credential_id' | 'transports'>[]> {
      const { rows } = await db.query<StoredCredential>(`SELECT credential_id, transports FROM owner_passkeys WHERE user_id = $1`, [userId]);
      return rows;
    },

    /** undefined when that credential is already registered (to anyone). */
    async create(input: Omit<StoredCredential, 'id'> & { name: string }): Promise<Passkey | undefined> {
      const { rows } = await db.query<Passkey>(
        `INSERT INTO owner_passkeys (id, user_id, credential_id, public_key, counter, transports, name)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (credential_id) DO NOTHING RETURNING ${PASSKEY}`,
        [generateId('pk'), input.user_id, input.credential_id, input.public_key, input.counter, input.transports, input.name],
      );
      return rows[0];
    },

    async rename(id: string, userId: string, name: string): Promise<Passkey | undefined> {
      const { rows } = await db.query<Passkey>(`UPDATE owner_passkeys SET name = $3 WHERE id = $1 AND user_id = $2 RETURNING ${PASSKEY}`, [
        id,
        userId,
        name,
      ]);
      return rows[0];
    },

    /** The deleted passkey's name; undefined when the owner has no such passkey. */
    async delete(id: string, userId: string): Promise<string | undefined> {
      const { rows } = await db.query<{ name: string }>(`DELETE FROM owner_passkeys WHERE id = $1 AND user_id = $2 RETURNING name`, [id, userId]);
      return rows[0]?.name;
    },

    async byCredentialId(credentialId: string): Promise<StoredCredential | undefined> {
      const { rows } = await db.query<StoredCredential>(
        `SELECT id, user_id, credential_id, public_key, counter::float8 AS counter, transports FROM owner_passkeys WHERE credential_id = $1`,
        [credentialId],
      );
      return rows[0];
    },

    /**
     * Records a use with the authenticator's new signature counter. The counter must grow (or stay
     * 0 for authenticators that keep none), checked in the statement itself so that two instances
     * cannot both accept the same counter: false means a replayed or cloned authenticator.
     */
    async recordUse(id: string, counter: number): Promise<boolean> {
      const { rowCount } = await db.query(
        `UPDATE owner_passkeys SET counter = $2, last_used_at = now() WHERE id = $1 AND (counter < $2 OR (counter = 0 AND $2 = 0))`,
        [id, counter],
      );
      return rowCount === 1;
    },

    async issueChallenge(challenge: string, purpose: ChallengePurpose, ttlSeconds: number, owner: Partial<IssuedChallenge> = {}) {
      await db.query(
        `INSERT INTO webauthn_challenges (challenge, purpose, user_id, request_id, session_hash, expires_at)
         VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6))`,
        [challenge, purpose, owner.user_id ?? null, owner.request_id ?? null, owner.session_hash ?? null, ttlSeconds],
      );
    },

    /** Spends a challenge (once, on any instance); undefined when unknown, spent, expired or for another purpose. */
    async takeChallenge(challenge: string, purpose: ChallengePurpose): Promise<IssuedChallenge | undefined> {
      const { rows } = await db.query<IssuedChallenge & { live: boolean }>(
        `DELETE FROM webauthn_challenges WHERE challenge = $1 AND purpose = $2 RETURNING user_id, request_id, session_hash, expires_at > now() AS live`,
        [challenge, purpose],
      );
      if (!rows[0]?.live) return undefined;
      const { live: _, ...issued } = rows[0];
      return issued;
    },
  };
}
