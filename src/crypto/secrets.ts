import { hash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

/** `bytes` random bytes, base64url: the one source of every id, secret, token and nonce the server mints. */
export function randomToken(bytes: number): string {
  return randomBytes(bytes).toString('base64url');
}

/** 256 random bits behind a readable prefix, e.g. `aa_as_…` for an agent secret. */
export function generateSecret(prefix: string): string {
  return `${prefix}_${randomToken(32)}`;
}

/** Shorter random identifiers (128 bits): ids are not secrets, but must not be guessable. */
export function generateId(prefix: string): string {
  return `${prefix}_${randomToken(16)}`;
}

// Letters and digits no one mistakes for one another (no 0/O, 1/I/L, 5/S, 8/B).
const MATCH_ALPHABET = '234679ACDEFGHJKMNPQRTUVWXYZ';

/**
 * A short code shown both where a sign-in waits and to the owner asked to approve it, so that the
 * owner can tell which of their agents' sign-ins they approve (`K7M-Q3X`). Not a secret.
 */
export function generateMatchCode(): string {
  const pick = () => MATCH_ALPHABET[randomInt(MATCH_ALPHABET.length)];
  return `${pick()}${pick()}${pick()}-${pick()}${pick()}${pick()}`;
}

// One-shot: half the cost of a createHash object, and every client-authenticated call digests a secret.
export function sha256(value: string): string {
  return hash('sha256', value, 'base64url');
}

/** Compares two strings in time that depends only on their lengths. */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

// Compared against when the account does not exist, so that an unknown id costs the same work.
const DECOY_HASH = sha256(generateSecret('decoy'));

/** Checks `secret` against a stored hash; with no stored hash it does the same work and fails. */
export function verifySecret(secret: string, storedHash: string | undefined): boolean {
  const ok = safeEqual(sha256(secret), storedHash ?? DECOY_HASH);
  return ok && storedHash !== undefined;
}
