import { grantIdOf } from '../oauth/access-token.js';
import type { Store } from '../store/index.js';
import type { VerifiedAccessTokens } from './verified-access-tokens.js';

/**
 * A valid access token that is still live: its grant is neither revoked nor expired, its agent and
 * client are active and its jti was not revoked (the grant cache, or one query). Carries the user's
 * current email. Undefined for anything else.
 */
export async function liveAccessToken(
  { store, verifiedTokens }: { store: Pick<Store, 'grants'>; verifiedTokens: VerifiedAccessTokens },
  token: string,
) {
  const claims = (await verifiedTokens.verifyAny(token))?.claims;
  if (!claims) return undefined;
  const grant = await store.grants.findAccessGrant(grantIdOf(claims.jti), claims.jti);
  if (!grant || grant.agent_id !== claims.sub || grant.client_id !== claims.client_id) return undefined;
  return { claims, email: grant.email };
}
