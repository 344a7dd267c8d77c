import { LRUCache } from 'lru-cache';
import { type AccessTokenClaims, checkAccessToken, type TokenKeys } from '../oauth/access-token.js';
import type { ResourceTokenClaims, ResourceTokens } from './resource-tokens.js';

/** An access token whose signature, header and claims passed. */
export interface VerifiedAccessToken {
  /** Shared by every check of the token: read them, never change them (they are frozen). */
  readonly claims: AccessTokenClaims | ResourceTokenClaims;
  /**
   * Its answer at /introspect while its grant is live, serialised the first time it is needed: the
   * answer depends on the claims alone (src/tokens/introspection.ts).
   */
  activeIntrospection?: string;
}

/**
 * The access tokens this process has verified. The keyring and the issuer never change while the
 * process runs, so a token that passed once passes again until it expires: the hot paths skip the
 * HMAC and the decoding (docs/operations.md, "Grant cache"). Only tokens that verified are kept, so
 * a caller without a valid token cannot fill it. Bounded like the grant cache, by GRANT_CACHE_SIZE
 * (0: off). One per process, on Services.
 */
export class VerifiedAccessTokens {
  private readonly tokens?: LRUCache<string, VerifiedAccessToken>;

  constructor(
    private readonly keys: TokenKeys,
    size: number,
    private readonly resourceTokens?: ResourceTokens,
  ) {
    if (size > 0) this.tokens = new LRUCache({ max: size });
  }

  /**
   * The token if it is valid and unexpired, else undefined. Says nothing about revocation: callers
   * look its grant up in the store.
   */
  verify(token: string): VerifiedAccessToken | undefined {
    let verified = this.tokens?.get(token);
    if (!verified) {
      const claims = checkAccessToken(this.keys, token);
      if (!claims) return undefined;
      verified = this.keep(token, claims);
    }
    return this.unexpired(verified);
  }

  /** As verify, for resource tokens (src/tokens/resource-tokens.ts) as well: their signatures are checked asynchronously. */
  async verifyAny(token: string): Promise<VerifiedAccessToken | undefined> {
    const verified = this.verify(token);
    if (verified || !this.resourceTokens || this.tokens?.has(token)) return verified;
    const claims = await this.resourceTokens.verify(token);
    return claims && this.unexpired(this.keep(token, claims));
  }

  private keep(token: string, claims: VerifiedAccessToken['claims']): VerifiedAccessToken {
    const verified = { claims };
    this.tokens?.set(token, verified);
    return verified;
  }

  private unexpired(verified: VerifiedAccessToken) {
    return verified.claims.exp > Date.now() / 1000 ? verified : undefined;
  }
}
