import { type AccessTokenClaims, grantIdOf } from '../oauth/access-token.js';
import type { Store } from '../store/index.js';

/**
 * The grant of an access token already verified (src/tokens/verified-access-tokens.ts), if it is still
 * live: neither revoked nor expired, its agent and client active, the token's jti not revoked on its
 * own (the grant cache, or one query). Carries the user's current email. Undefined for anything else.
 */
export async function liveGrantOf({ store }: { store: Pick<Store, 'grants'> }, claims: Pick<AccessTokenClaims, 'jti' | 'sub' | 'client_id'>) {
  const grant = await store.grants.findAccessGrant(grantIdOf(claims.jti), claims.jti);
  if (!grant || grant.agent_id !== claims.sub || grant.client_id !== claims.client_id) return undefined;
  return grant;
}
