import type { JsonWebKey, KeyObject, webcrypto } from 'node:crypto';
import { keyFromPrivateKey } from './assertion.js';
import { byteSequence, type Component, serializeSignatureInput, signatureBase, stringField, WEB_BOT_AUTH } from './http-signatures.js';

/**
 * Signed agent requests (docs/protocol.md, "Signed agent requests"; Web Bot Auth): every request an
 * agent makes carries an RFC 9421 signature by one of its request-signing keys, and names in
 * `Signature-Agent` the agent-auth server whose directory lists that key.
 */

/** A private Ed25519 key: a JWK `{kty: "OKP", crv: "Ed25519", x, d}`, a `KeyObject` or a WebCrypto `CryptoKey`. */
export type RequestSigningKey = { kty?: string; crv?: string; x?: string; d?: string } | KeyObject | webcrypto.CryptoKey;

export interface SignRequestOptions {
  /** The agent-auth server (ISSUER) whose directory lists the key; its origin goes in `Signature-Agent`. */
  issuer: string;
  /** How long the signature is valid (default 300). */
  expiresInSeconds?: number;
}

/** The covered components: whom the request is for, and where the signer's keys are. */
const COMPONENTS: Component[] = [{ name: '@authority' }, { name: WEB_BOT_AUTH.signatureAgentHeader }];
const LABEL = 'sig1';
// Web Bot Auth's nonce: 64 random bytes, base64 (as Cloudflare's web-bot-auth writes it).
const NONCE_BYTES = 64;

// Told apart by shape: a JWK has no usages, and a CryptoKey may come from another realm's WebCrypto.
const isCryptoKey = (key: RequestSigningKey): key is webcrypto.CryptoKey => 'usages' in key && 'algorithm' in key;

/** The signer of a key: its keyid (RFC 7638 thumbprint) and how it signs; refuses any key but a private Ed25519 one. */
async function signerOf(key: RequestSigningKey) {
  const { KeyObject } = await import('node:crypto');
  const signer = await keyFromPrivateKey(isCryptoKey(key) ? KeyObject.from(key) : (key as KeyObject | JsonWebKey));
  if (signer.algorithm !== 'EdDSA') throw new TypeError('a request-signing key must be an Ed25519 private key');
  return signer;
}

/** A signer for many requests: the key is imported once. */
export type RequestSigner = (request: Request) => Promise<Request>;

/** Makes a signer that signs each request it is given with `key` (see signRequest). */
export async function requestSigner(key: RequestSigningKey, { issuer, expiresInSeconds = WEB_BOT_AUTH.defaultExpiresInSeconds }: SignRequestOptions) {
  const signer = await signerOf(key);
  const agent = stringField(new URL(issuer).origin);
  return async (request: Request): Promise<Request> => {
    const headers = new Headers(request.headers);
    headers.set(WEB_BOT_AUTH.signatureAgentHeader, agent);
    const created = Math.floor(Date.now() / 1000);
    const nonce = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(NONCE_BYTES))));
    const input = serializeSignatureInput(COMPONENTS, {
      created,
      expires: created + expiresInSeconds,
      keyid: signer.keyId,
      alg: WEB_BOT_AUTH.algorithm,
      nonce,
      tag: WEB_BOT_AUTH.tag,
    });
    const base = signatureBase({ url: request.url, header: (name) => headers.get(name) ?? undefined }, COMPONENTS, input)!;
    const signature = await signer.sign(new TextEncoder().encode(base));
    headers.set('signature-input', `${LABEL}=${input}`);
    headers.set('signature', `${LABEL}=${byteSequence(signature)}`);
    return new Request(request, { headers });
  };
}

/**
 * Returns a copy of `request` signed with the agent's request-signing `key`: `Signature-Agent` names
 * `issuer`'s origin, and `Signature-Input` covers `@authority` and `signature-agent` with `created`,
 * `expires` (default 300 s later), `keyid` (the key's RFC 7638 thumbprint), `alg`, a `nonce` and
 * `tag="web-bot-auth"`. For many requests, `requestSigner` or `signedFetch` import the key once.
 */
export async function signRequest(request: Request, key: RequestSigningKey, options: SignRequestOptions): Promise<Request> {
  return (await requestSigner(key, options))(request);
}

/** A `fetch` whose every request is signed with `key` (see signRequest). */
export async function signedFetch(key: RequestSigningKey, options: SignRequestOptions & { fetch?: typeof fetch }): Promise<typeof fetch> {
  const sign = await requestSigner(key, options);
  const send = options.fetch ?? fetch;
  return async (input, init) => send(await sign(new Request(input, init)));
}
