import type { JsonWebKey, KeyObject } from 'node:crypto';
import { AGENT_ASSERTION, type AgentAssertionAlg } from './protocol.js';

/**
 * Agent assertions (docs/protocol.md, "Agent assertions"): the short JWT an agent signs with its
 * key, in place of its secret, for one authenticate call.
 */

/**
 * Signs the JWS signing input (`header.payload`, ASCII) and returns the signature as JWS wants it:
 * Ed25519's 64 bytes, or for ES256 the 64 bytes r || s (not DER). For keys held elsewhere: a vault,
 * an HSM, another process.
 */
export type AssertionSigner = (signingInput: Uint8Array) => Promise<Uint8Array> | Uint8Array;

/** A private key as Node takes one: a KeyObject, a JWK, or PEM text (PKCS#8, SEC1). */
export type PrivateKeyInput = KeyObject | JsonWebKey | string;

/** The key an agent signs with: its id at the server, its algorithm, and how to sign. */
export interface AssertionKey {
  keyId: string;
  algorithm: AgentAssertionAlg;
  sign: AssertionSigner;
}

const encoder = new TextEncoder();
const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/={1,2}$/, ''); // base64 pads with two at most
const encodeJson = (value: object) => base64url(encoder.encode(JSON.stringify(value)));

/**
 * The signing key of a private key: Ed25519 signs EdDSA, P-256 ES256. The key id is the RFC 7638
 * thumbprint of its public half, as the server names a key registered without a kid, unless given.
 */
export async function keyFromPrivateKey(input: PrivateKeyInput, keyId?: string): Promise<AssertionKey> {
  // Loaded here, not at the top: agents that sign with a secret or a callback need no node:crypto.
  const { createHash, createPrivateKey, createPublicKey, sign, KeyObject } = await import('node:crypto');
  const key =
    input instanceof KeyObject ? input : typeof input === 'string' ? createPrivateKey(input) : createPrivateKey({ key: input, format: 'jwk' });
  if (key.type !== 'private') throw new TypeError('privateKey must be a private key');
  const jwk = createPublicKey(key).export({ format: 'jwk' });
  let algorithm: AgentAssertionAlg;
  let members: Record<string, unknown>;
  if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') {
    algorithm = 'EdDSA';
    members = { crv: jwk.crv, kty: jwk.kty, x: jwk.x };
  } else if (jwk.kty === 'EC' && jwk.crv === 'P-256') {
    algorithm = 'ES256';
    members = { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y };
  } else {
    throw new TypeError('privateKey must be an Ed25519 or a P-256 key');
  }
  return {
    // RFC 7638 §3: the required members, in lexicographic order, no whitespace.
    keyId: keyId ?? createHash('sha256').update(JSON.stringify(members)).digest('base64url'),
    algorithm,
    sign: (data) => sign(algorithm === 'EdDSA' ? null : 'sha256', data, { key, dsaEncoding: 'ieee-p1363' }),
  };
}

/** A compact JWS of `claims`, signed with `key`, with the given `typ`. */
async function signJwt(key: AssertionKey, typ: string, claims: object): Promise<string> {
  const header = encodeJson({ alg: key.algorithm, kid: key.keyId, typ });
  const payload = encodeJson(claims);
  const signature = await key.sign(encoder.encode(`${header}.${payload}`));
  return `${header}.${payload}.${base64url(signature)}`;
}

/** Claims every assertion carries: issued now, valid `lifetime` seconds, used once. */
function freshClaims(lifetime: number) {
  const iat = Math.floor(Date.now() / 1000);
  return { iat, exp: iat + lifetime, jti: crypto.randomUUID() };
}

/** A fresh assertion for one authenticate call: `agentId` signing in at `issuer` for `requestId`. */
export function createAssertion(key: AssertionKey, { agentId, issuer, requestId }: { agentId: string; issuer: string; requestId: string }) {
  return signJwt(key, AGENT_ASSERTION.type, {
    iss: agentId,
    sub: agentId,
    aud: issuer,
    request_id: requestId,
    ...freshClaims(AGENT_ASSERTION.maxLifetimeSeconds),
  });
}

/**
 * A client assertion for `private_key_jwt` (RFC 7523 §2.2, §3): the client `clientId`
 * authenticating to the authorization server `audience` at its token endpoint.
 */
export function createClientAssertion(key: AssertionKey, { clientId, audience }: { clientId: string; audience: string }) {
  return signJwt(key, 'JWT', { iss: clientId, sub: clientId, aud: audience, ...freshClaims(AGENT_ASSERTION.maxLifetimeSeconds) });
}
