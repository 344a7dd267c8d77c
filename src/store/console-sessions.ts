import type { Db } from '../db/types.js';

/** Console sessions signed out of before they expired (migrations/009), by a digest of the cookie. */
export function createConsoleSessionStore(db: Db) {
  return {
    async signOut(sessionHash: string, expiresAt: Date): Promise<void> {
      await db.query('INSERT INTO console_signed_out (session_hash, expires_at) VALUES ($1, $2) ON CONFLICT DO NOTHING', [sessionHash, expiresAt]);
    },

    async isSignedOut(sessionHash: string): Promise<boolean> {
      const { rows } = await db.query('SELECT 1 FROM console_signed_out WHERE session_hash = $1', [sessionHash]);
      return rows.length > 0;
    },
  };
}
