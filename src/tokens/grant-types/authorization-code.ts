import { generateId, sha256 } from '../../crypto/secrets.js';
import { InvalidGrant, InvalidRequest } from '../../errors.js';
import { newRefreshToken } from '../../oauth/refresh-token-format.js';
import { signIdToken } from '../../oidc/id-token.js';
import { authenticateCaller } from '../client-authentication.js';
import { dpopKeyOf } from '../dpop-binding.js';
import { revokeReused } from '../revocation.js';
import { type GrantHandler, tokenResponse } from '../token-response.js';

// RFC 7636 §4.1: 43 to 128 characters of the unreserved set.
const CODE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

/** RFC 6749 §4.1.3 with PKCE (RFC 7636 §4.6, S256 only). */
export const authorizationCodeGrant: GrantHandler = async (deps, call, body, context) => {
  const client = await authenticateCaller(deps, call);
  const { code, redirect_uri: redirectUri, code_verifier: verifier } = body;
  if (!code) throw new InvalidRequest('code is required');
  // Every authorization request carried a redirect_uri, so the exchange must repeat it (§4.1.3).
  if (!redirectUri) throw new InvalidRequest('redirect_uri is required');
  if (!verifier) throw new InvalidRequest('code_verifier is required (PKCE)');
  if (!CODE_VERIFIER.test(verifier)) {
    throw new InvalidRequest('code_verifier must be 43 to 128 characters of A-Z, a-z, 0-9, "-", ".", "_", "~"');
  }
  const dpopJkt = dpopKeyOf(client, body);

  const { config, store, signingKeys } = deps;
  const codeHash = sha256(code);
  const grantId = generateId('grant');
  const refreshToken = newRefreshToken();
  const redeemed = await store.grants.exchangeCode({
    codeHash,
    clientId: client.client_id,
    redirectUri,
    codeChallenge: sha256(verifier),
    grantId,
    refreshTokenHash: sha256(refreshToken),
    lifetimes: config.ttl,
    dpopJkt,
  });

  if (!redeemed) {
    // A replayed code: its grant is revoked.
    await revokeReused(deps, 'code', codeHash, context);
    throw new InvalidGrant('the authorization code is invalid, expired or already used');
  }
  if (!redeemed.agent_active) throw new InvalidGrant('the agent of this authorization is no longer active');
  if (!redeemed.redirect_uri_matches) throw new InvalidGrant('redirect_uri does not match the one of the authorization request');
  if (!redeemed.verifier_matches) throw new InvalidGrant('code_verifier does not match the code_challenge');
  if (!redeemed.dpop_jkt_matches) throw new InvalidGrant('the DPoP proof is not signed with the key the authorization request named (dpop_jkt)');
  const { agent_id, model, scope } = redeemed;
  const grant = { grant_id: grantId, client_id: client.client_id, agent_id, model };
  deps.events.emit('grant.issued', grant, context);
  // OpenID Connect Core §3.1.3.3: an ID token when the scope asks for one, in OpenID Connect mode.
  const idToken =
    signingKeys && scope.split(' ').includes('openid')
      ? (accessToken: string) => signIdToken(signingKeys, config, { ...redeemed, ...grant }, accessToken)
      : undefined;
  return tokenResponse(deps, { ...grant, scope, dpop_jkt: dpopJkt ?? undefined }, refreshToken, idToken);
};
