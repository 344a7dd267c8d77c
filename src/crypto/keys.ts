import { createHash, randomBytes } from 'node:crypto';
import type { Queryable } from '../db/types.js';

export interface SigningKey {
  kid: string;
  key: Uint8Array;
}

/** The HS256 keys, newest first: the first signs, all of them verify (rotation). */
export interface Keyring {
  current: SigningKey;
  byKid: Map<string, SigningKey>;
}

// Derived from the secret, so every instance given the same secrets agrees on the kid.
function kidFor(secret: string): string {
  return createHash('sha256').update(secret).digest('base64url').slice(0, 16);
}

export function keyringFrom(secrets: string[]): Keyring {
  const keys = secrets.map((s) => ({ kid: kidFor(s), key: new TextEncoder().encode(s) }));
  return { current: keys[0], byKid: new Map(keys.map((k) => [k.kid, k])) };
}

/**
 * Uses the configured secrets, or else the one kept in the store, creating it on first start.
 * ON CONFLICT makes two instances starting together settle on the same secret.
 */
export async function loadKeyring(db: Queryable, configured: string[]): Promise<Keyring> {
  if (configured.length > 0) return keyringFrom(configured);
  const generated = randomBytes(48).toString('base64url');
  await db.query(
    `INSERT INTO server_keys (kid, purpose, secret) VALUES ($1, 'jwt', $2) ON CONFLICT (kid) DO NOTHING`,
    ['jwt-default', generated],
  );
  const { rows } = await db.query<{ secret: string }>(`SELECT secret FROM server_keys WHERE kid = 'jwt-default'`);
  return keyringFrom([rows[0].secret]);
}
