import { randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK } from 'jose';
import { sha256 } from '../../src/crypto/secrets.js';
import { ISSUER } from './server.js';

/** A DPoP key pair as a client holds it: the private key signs proofs, the public JWK travels in them. */
export interface DpopKey {
  alg: string;
  privateKey: CryptoKey;
  jwk: JWK;
  /** Its RFC 7638 thumbprint: what tokens are bound to. */
  jkt: string;
}

export async function dpopKey(alg = 'ES256'): Promise<DpopKey> {
  const { publicKey, privateKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = await exportJWK(publicKey);
  return { alg, privateKey, jwk, jkt: await calculateJwkThumbprint(jwk) };
}

const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
const SIGN: Record<string, AlgorithmIdentifier | EcdsaParams | RsaPssParams> = {
  ES256: { name: 'ECDSA', hash: 'SHA-256' },
  EdDSA: { name: 'Ed25519' },
  Ed25519: { name: 'Ed25519' },
  RS256: { name: 'RSASSA-PKCS1-v1_5' },
  PS256: { name: 'RSA-PSS', saltLength: 32 },
};

/**
 * A DPoP proof (RFC 9449 §4.2) for POST {ISSUER}/token unless told otherwise, signed by `key`; every
 * header member and claim may be overridden (undefined drops it), for the refusals.
 */
export async function dpopProof(
  key: DpopKey,
  options: {
    htm?: string;
    htu?: string;
    accessToken?: string;
    nonce?: string;
    claims?: Record<string, unknown>;
    header?: Record<string, unknown>;
  } = {},
): Promise<string> {
  const header = { typ: 'dpop+jwt', alg: key.alg, jwk: key.jwk, ...options.header };
  const claims = {
    jti: randomUUID(),
    htm: options.htm ?? 'POST',
    htu: options.htu ?? `${ISSUER}/token`,
    iat: Math.floor(Date.now() / 1000),
    ...(options.accessToken === undefined ? {} : { ath: sha256(options.accessToken) }),
    ...(options.nonce === undefined ? {} : { nonce: options.nonce }),
    ...options.claims,
  };
  const input = `${part(header)}.${part(claims)}`;
  const signature = await crypto.subtle.sign(SIGN[key.alg], key.privateKey, new TextEncoder().encode(input));
  return `${input}.${Buffer.from(signature).toString('base64url')}`;
}
