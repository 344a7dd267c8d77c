import { createHash } from 'node:crypto';

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
