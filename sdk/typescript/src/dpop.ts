/**
 * DPoP (RFC 9449) for an agent that holds tokens: a key pair of its own, proofs signed with it for
 * each request, and a fetch that sends them. Tokens obtained with proofs are bound to the key: a
 * copy of them is worth nothing without it.
 */
import type { JsonWebKey, webcrypto } from 'node:crypto';

const encoder = new TextEncoder();
const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/={1,2}$/, '');
const encodeJson = (value: object) => base64url(encoder.encode(JSON.stringify(value)));
const ES256 = { name: 'ECDSA', namedCurve: 'P-256' } as const;

/** An ES256 DPoP key: its private half as a JWK, so that it can be kept beside the tokens bound to it. */
export type DpopPrivateJwk = JsonWebKey;

/** A new ES256 key pair, as a private JWK. */
export async function generateDpopKey(): Promise<DpopPrivateJwk> {
  const pair = await crypto.subtle.generateKey(ES256, true, ['sign', 'verify']);
  return crypto.subtle.exportKey('jwk', pair.privateKey) as Promise<DpopPrivateJwk>;
}

/** Signs DPoP proofs (RFC 9449 §4.2) with one key, given as a private JWK or the promise of one. */
export class DpopSigner {
  private readonly key: Promise<{ privateKey: webcrypto.CryptoKey; publicJwk: JsonWebKey }>;

  constructor(jwk: DpopPrivateJwk | Promise<DpopPrivateJwk>) {
    this.key = Promise.resolve(jwk).then(async (k) => ({
      privateKey: await crypto.subtle.importKey('jwk', k, ES256, false, ['sign']),
      publicJwk: { kty: k.kty, crv: k.crv, x: k.x, y: k.y },
    }));
  }

  /** A proof for `method` `url` (query and fragment left out), with `ath` when it presents `accessToken`, and the server's `nonce`. */
  async proof(method: string, url: string | URL, options: { accessToken?: string; nonce?: string } = {}): Promise<string> {
    const target = new URL(url);
    const claims = {
      jti: crypto.randomUUID(),
      htm: method.toUpperCase(),
      htu: `${target.origin}${target.pathname}`,
      iat: Math.floor(Date.now() / 1000),
      ...(options.accessToken && {
        ath: base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(options.accessToken)))),
      }),
      ...(options.nonce && { nonce: options.nonce }),
    };
    const { privateKey, publicJwk } = await this.key;
    const input = `${encodeJson({ typ: 'dpop+jwt', alg: 'ES256', jwk: publicJwk })}.${encodeJson(claims)}`;
    const signature = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, privateKey, encoder.encode(input));
    return `${input}.${base64url(new Uint8Array(signature))}`;
  }
}

/** Whether an answer asks for a nonce (RFC 9449 §8: 400 at a token endpoint, §9: 401 with the DPoP challenge at a resource). */
async function wantsNonce(res: Response): Promise<boolean> {
  if (!res.headers.has('dpop-nonce')) return false;
  if (res.status === 401) return /use_dpop_nonce/.test(res.headers.get('www-authenticate') ?? '');
  if (res.status !== 400) return false;
  const body = (await res
    .clone()
    .json()
    .catch(() => undefined)) as { error?: unknown } | undefined;
  return body?.error === 'use_dpop_nonce';
}

/**
 * A fetch that speaks DPoP with `signer`: token requests (a form body with `grant_type`) carry a proof,
 * so the tokens come bound; a request presenting `Authorization: Bearer <token>` for a token that
 * `isBound` says was issued as DPoP goes as `Authorization: DPoP <token>` with a proof for it. The
 * server's nonce is kept per origin, and a request refused for want of one is sent once more with it.
 * A client assertion (RFC 7523) is single use, and the refused request spent it: `renewAssertion` puts
 * a new one in the token request's body before it goes again.
 */
export function dpopFetch(
  signer: DpopSigner,
  isBound: (accessToken: string) => boolean | Promise<boolean>,
  base: typeof fetch = fetch,
  renewAssertion?: (body: URLSearchParams) => Promise<void>,
): typeof fetch {
  const nonces = new Map<string, string>();
  return async (input, init) => {
    // The MCP SDK passes a URL and its init; a Request's body could be read only once.
    if (input instanceof Request) return base(input, init);
    const url = new URL(input);
    const method = (init?.method ?? 'GET').toUpperCase();
    const headers = new Headers(init?.headers);
    const bearer = /^Bearer +(\S+)$/i.exec(headers.get('authorization') ?? '')?.[1];
    const tokenRequest = method === 'POST' && init?.body instanceof URLSearchParams && init.body.has('grant_type');
    const accessToken = bearer && (await isBound(bearer)) ? bearer : undefined;
    if (!tokenRequest && !accessToken) return base(input, init);
    if (accessToken) headers.set('authorization', `DPoP ${accessToken}`);
    const send = async () => {
      headers.set('dpop', await signer.proof(method, url, { accessToken, nonce: nonces.get(url.origin) }));
      const res = await base(url, { ...init, headers });
      const nonce = res.headers.get('dpop-nonce');
      if (nonce) nonces.set(url.origin, nonce);
      return res;
    };
    const first = await send();
    if (!(await wantsNonce(first))) return first;
    const body = init?.body;
    if (body instanceof URLSearchParams && body.has('client_assertion')) await renewAssertion?.(body);
    return send();
  };
}
