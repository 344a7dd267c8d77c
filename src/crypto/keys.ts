import { createHash, randomBytes, webcrypto } from 'node:crypto';
import type { Queryable } from '../db/types.js';

export interface SigningKey {
  kid: string;
  key: Uint8Array;
  /**
   * The same key imported once for WebCrypto: given the raw bytes, jose imports them again on
   * every sign and verify, which costs more than the HMAC itself.
   */
  cryptoKey: Promise<webcrypto.CryptoKey>;
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
  const keys = secrets.map((s) => {
    const key = new TextEncoder().encode(s);
    const cryptoKey = webcrypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
    return { kid: kidFor(s), key, cryptoKey };
  });
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
