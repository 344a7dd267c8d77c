import { byteSequence, type Component, contentDigest, serializeSignatureInput, signatureBase, WEB_BOT_AUTH } from '@agent-auth/agent/http-signatures';
import { calculateJwkThumbprint } from 'jose';
import type { SigningKeyAgent } from '../store/agent-keys.js';
import type { Store } from '../store/index.js';

/**
 * The request-signing key directory (docs/protocol.md, "Signed agent requests"): the keys of every
 * active agent, read from the store on every call (no cache an instance could hold stale: a key
 * deleted or an agent deactivated or kill-switched elsewhere is gone from the next answer), and the
 * directory's own response signature.
 */

export interface DirectoryDeps {
  store: Pick<Store, 'agentKeys' | 'serverKeys'>;
}

/** What the directory's signature covers: the authority the website asked, and the body it got. */
const COMPONENTS: Component[] = [{ name: '@authority', req: true }, { name: 'content-digest' }];

/**
 * The directory's own Ed25519 key, made on first use and kept in the store, so that every instance
 * signs with the same one. The agents' private keys never reach the server, so it cannot sign with
 * them as the directory draft asks; it lists this key first and signs with it instead.
 */
async function directoryKey(serverKeys: DirectoryDeps['store']['serverKeys']) {
  const { createPrivateKey, generateKeyPairSync } = await import('node:crypto');
  const candidate = JSON.stringify(generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' }));
  const privateKey = createPrivateKey({ key: JSON.parse(await serverKeys.directoryKey(candidate)), format: 'jwk' });
  const { kty, crv, x } = privateKey.export({ format: 'jwk' }) as Record<string, string>;
  const jwk = { kty, crv, x };
  return { privateKey, jwk: { ...jwk, kid: await calculateJwkThumbprint(jwk, 'sha256') } };
}

/**
 * The directory's body and headers for a request to `url` (as the website sent it: its authority is
 * signed), valid for `maxAgeSeconds`.
 */
export async function directoryResponse({ store }: DirectoryDeps, url: string, maxAgeSeconds: number) {
  const [{ privateKey, jwk }, keys] = await Promise.all([directoryKey(store.serverKeys), store.agentKeys.directory()]);
  const body = JSON.stringify({ keys: [jwk, ...keys] });
  const digest = await contentDigest(body);
  const created = Math.floor(Date.now() / 1000);
  const input = serializeSignatureInput(COMPONENTS, {
    created,
    expires: created + maxAgeSeconds,
    keyid: jwk.kid,
    alg: WEB_BOT_AUTH.algorithm,
    tag: WEB_BOT_AUTH.directoryTag,
  });
  const request = { url, header: () => undefined };
  const base = signatureBase({ url, header: (name) => (name === 'content-digest' ? digest : undefined) }, COMPONENTS, input, request)!;
  const { sign } = await import('node:crypto');
  const signature = byteSequence(sign(null, Buffer.from(base), privateKey));
  return {
    body,
    headers: {
      'content-type': WEB_BOT_AUTH.directoryMediaType,
      'cache-control': `public, max-age=${maxAgeSeconds}`,
      'content-digest': digest,
      'signature-input': `sig1=${input}`,
      signature: `sig1=${signature}`,
    },
  };
}

/** Who holds a request-signing key, as a website may learn it (never the owner's email); undefined for an unknown kid. */
export async function signingKeyAgent({ store }: { store: Pick<Store, 'agentKeys'> }, kid: string): Promise<SigningKeyAgent | undefined> {
  return store.agentKeys.signingKeyAgent(kid);
}
