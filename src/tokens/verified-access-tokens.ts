import { LRUCache } from 'lru-cache';
import { type AccessTokenClaims, checkAccessToken, type TokenKeys } from '../oauth/access-token.js';

/** An access token whose signature, header and claims passed. */
export interface VerifiedAccessToken {
  /** Shared by every check of the token: read them, never change them (they are frozen). */
  readonly claims: AccessTokenClaims;
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
      verified = { claims };
      this.tokens?.set(token, verified);
    }
    return verified.claims.exp > Date.now() / 1000 ? verified : undefined;
  }
}
