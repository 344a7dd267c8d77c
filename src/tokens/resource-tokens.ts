import { type CryptoKey, decodeProtectedHeader, importJWK, jwtVerify, SignJWT } from 'jose';
import type { Config } from '../config.js';
import { randomToken } from '../crypto/secrets.js';
import { type AccessTokenClaims, type BoundGrantSubject, claimsSchema as websiteClaims } from '../oauth/access-token.js';
import { scopeGrantsEmail } from '../oauth/scopes.js';
import type { PublishedKey, SigningKeys } from '../oidc/signing-keys.js';
import { SIGNING_ALGS, type SigningAlg } from '../protocol/signing.js';
import type { Store } from '../store/index.js';

/** The claims of a resource's access token, as checked (RFC 9068 §2.2; docs/protocol.md, "Resources"): a website's, but the model. */
const claimsSchema = websiteClaims.omit({ model: true });

/** A resource's token is checked like a website's, but carries no model. */
export type ResourceTokenClaims = Omit<AccessTokenClaims, 'model'> & { model?: undefined };

/** A resource's token, among the verified ones (src/tokens/verified-access-tokens.ts): the one kind without a model. */
export const isResourceToken = (claims: AccessTokenClaims | ResourceTokenClaims): claims is ResourceTokenClaims => claims.model === undefined;

/** The grant a resource token is signed from: its resource, and the owner's email as the code exchange or refresh read it. */
export interface ResourceGrant extends BoundGrantSubject {
  resource: string;
  email?: string | null;
}

export interface ResourceTokenDeps {
  config: Pick<Config, 'issuer' | 'ttl'>;
  store: Pick<Store, 'resources'>;
  /** The deployment's asymmetric keys (src/oidc/signing-keys.ts), opened the first time a resource token needs them. */
  signingKeys: () => Promise<SigningKeys>;
  /** The published public keys, read without opening (so without making) the keys: checking a token writes nothing. */
  publishedKeys: () => Promise<PublishedKey[]>;
}

// Our tokens are short; anything longer is refused before parsing, as for the HS256 ones.
const MAX_TOKEN_LENGTH = 4096;

/**
 * Access tokens for resources (RFC 9068): JWTs signed with the signing keys that the JWKS publishes,
 * so that an MCP server verifies them without calling us. `aud` is the resource as registered; the
 * jti names the grant as it does for websites' tokens (src/oauth/access-token.ts), so revocation is
 * checked the same way. One per process, on Services.
 */
export class ResourceTokens {
  private readonly publicKeys = new Map<string, CryptoKey>();

  constructor(private readonly deps: ResourceTokenDeps) {}

  /** Signs with the current key of the resource's algorithm. */
  /** `jtiSuffix`: the random part of the jti, when the caller had to know it beforehand (signAccessToken). */
  async sign(grant: ResourceGrant, jtiSuffix = randomToken(12)): Promise<{ token: string; expiresIn: number }> {
    const { config, store, signingKeys } = this.deps;
    const alg: SigningAlg = (await store.resources.get(grant.resource))?.signing_alg ?? 'RS256';
    const { kid, key } = await (await signingKeys()).current(alg);
    const iat = Math.floor(Date.now() / 1000);
    const expiresIn = config.ttl.resourceAccessToken;
    const claims = {
      iss: config.issuer,
      sub: grant.agent_id,
      aud: grant.resource,
      client_id: grant.client_id,
      scope: grant.scope,
      jti: `${grant.grant_id}.${jtiSuffix}`,
      iat,
      exp: iat + expiresIn,
      ...(grant.email && scopeGrantsEmail(grant.scope) ? { email: grant.email } : {}),
      // RFC 9449 §6.1: bound to the DPoP key of the request, as the website's tokens are.
      ...(grant.dpop_jkt ? { cnf: { jkt: grant.dpop_jkt } } : {}),
    };
    return { token: await new SignJWT(claims).setProtectedHeader({ typ: 'at+jwt', alg, kid }).sign(key), expiresIn };
  }

  /**
   * The claims of a resource token of ours whose signature, header, issuer and expiry hold; undefined
   * for anything else. Says nothing about revocation, as for the HS256 tokens.
   */
  async verify(token: string): Promise<ResourceTokenClaims | undefined> {
    if (token.length > MAX_TOKEN_LENGTH) return undefined;
    try {
      const { alg, kid, typ, crit } = decodeProtectedHeader(token);
      if (typ !== 'at+jwt' || crit !== undefined || typeof kid !== 'string' || !SIGNING_ALGS.includes(alg as SigningAlg)) return undefined;
      const key = await this.publicKey(kid, alg as SigningAlg);
      if (!key) return undefined;
      const { payload } = await jwtVerify(token, key, { algorithms: [alg!], issuer: this.deps.config.issuer, typ: 'at+jwt' });
      const claims = claimsSchema.safeParse(payload);
      return claims.success ? Object.freeze({ ...claims.data }) : undefined;
    } catch {
      return undefined;
    }
  }

  /** A published key by kid (a retired key stays published while what it signed may live). */
  private async publicKey(kid: string, alg: SigningAlg): Promise<CryptoKey | undefined> {
    const known = this.publicKeys.get(kid);
    if (known) return known;
    const jwk = (await this.deps.publishedKeys()).find((k) => k.kid === kid && k.alg === alg);
    if (!jwk) return undefined;
    const key = (await importJWK(jwk, alg)) as CryptoKey;
    this.publicKeys.set(kid, key);
    return key;
  }
}
