import { calculateJwkThumbprint, type CryptoKey, exportJWK, generateKeyPair, importJWK, type JWK } from 'jose';
import { SIGNING_ALGS, type SigningAlg } from '../protocol/signing.js';
import type { Store } from '../store/index.js';

export type { SigningAlg } from '../protocol/signing.js';

/** The key that signs ID tokens now. */
export interface CurrentSigningKey {
  kid: string;
  alg: SigningAlg;
  key: CryptoKey;
}

/** A public key as the JWKS publishes it (RFC 7517 §4). */
export type PublishedKey = JWK & { kid: string; alg: SigningAlg; use: 'sig' };

export interface SigningKeys {
  /** The key to sign with in `alg`; every instance re-reads it from the store at least once a minute. */
  current(alg: SigningAlg): Promise<CurrentSigningKey>;
  /** The public half of every key whose tokens may still be valid: the current ones RS256 first, then retired ones. */
  published(): Promise<PublishedKey[]>;
  /** Makes a new key current for every algorithm; the old ones stay published until what they signed has expired. */
  rotate(): Promise<PublishedKey[]>;
}

/*
 * An instance learns of a rotation made elsewhere when it next reads the current key, so for up to
 * this long it may still sign with the retired one. A retired key therefore stays published longer
 * than the tokens it signed live, by twice that (a read may straddle the rotation).
 */
const CURRENT_KEY_MAX_AGE_SECONDS = 60;
const RETIRED_KEY_MARGIN_SECONDS = 2 * CURRENT_KEY_MAX_AGE_SECONDS;
const PUBLISHED_MAX_AGE_MS = 1000;

const GENERATE: Record<SigningAlg, Parameters<typeof generateKeyPair>[1]> = {
  RS256: { modulusLength: 2048, extractable: true },
  ES256: { extractable: true },
  EdDSA: { crv: 'Ed25519', extractable: true },
};

async function newKeyPair(alg: SigningAlg) {
  const { privateKey, publicKey } = await generateKeyPair(alg, GENERATE[alg]);
  const publicJwk = await exportJWK(publicKey);
  // The RFC 7638 thumbprint: the same key always gets the same kid.
  const kid = await calculateJwkThumbprint(publicJwk);
  return { kid, privateJwk: await exportJWK(privateKey), publicJwk: { ...publicJwk, kid, alg, use: 'sig' } as PublishedKey };
}

/**
 * The ID token signing keys, one current key pair per algorithm (a website may register its own,
 * `id_token_signed_response_alg`), kept in the store so that every instance signs with, and
 * publishes, the same ones; the private half never leaves the server. On start, an algorithm
 * without a current key gets one. `tokenLifetimeSeconds` is how long a signed token stays valid
 * (the access token's lifetime).
 */
export async function openSigningKeys(serverKeys: Store['serverKeys'], tokenLifetimeSeconds: number): Promise<SigningKeys> {
  const cached = new Map<SigningAlg, { key: CurrentSigningKey; readAt: number }>();
  let published: { keys: Promise<PublishedKey[]>; readAt: number } | undefined;

  async function readCurrent(alg: SigningAlg): Promise<CurrentSigningKey | undefined> {
    const stored = await serverKeys.currentSigningKey<SigningAlg, JWK>(alg);
    if (!stored) return undefined;
    const { kid, private_jwk: privateJwk } = stored;
    const key = { kid, alg, key: (await importJWK(privateJwk, alg)) as CryptoKey };
    cached.set(alg, { key, readAt: Date.now() });
    return key;
  }

  async function rotateOne(alg: SigningAlg): Promise<PublishedKey> {
    const pair = await newKeyPair(alg);
    await serverKeys.rotateSigningKey({ ...pair, alg }, tokenLifetimeSeconds + RETIRED_KEY_MARGIN_SECONDS);
    published = undefined;
    await readCurrent(alg);
    return pair.publicJwk;
  }

  for (const alg of SIGNING_ALGS) if (!(await readCurrent(alg))) await rotateOne(alg);

  return {
    async current(alg) {
      const known = cached.get(alg);
      if (known && Date.now() - known.readAt < CURRENT_KEY_MAX_AGE_SECONDS * 1000) return known.key;
      // The code is already spent when this runs: should the store fail now, or have no current key
      // (emptied by hand), keep signing with the key we had rather than lose the sign-in.
      const key = await readCurrent(alg).catch((err) => {
        if (!known) throw err;
      });
      return key ?? known!.key;
    },
    published() {
      // Read at most once a second (anyone may ask, as often as they like); a key made current on
      // another instance is published here within that second.
      if (!published || Date.now() - published.readAt >= PUBLISHED_MAX_AGE_MS) {
        const keys = serverKeys.publishedSigningKeys<PublishedKey>(SIGNING_ALGS);
        published = { keys, readAt: Date.now() };
        keys.catch(() => (published = undefined));
      }
      return published.keys;
    },
    async rotate() {
      const created: PublishedKey[] = [];
      for (const alg of SIGNING_ALGS) created.push(await rotateOne(alg));
      return created;
    },
  };
}
