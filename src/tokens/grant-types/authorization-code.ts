import { generateId, randomToken, sha256 } from '../../crypto/secrets.js';
import { InvalidGrant, InvalidRequest, InvalidTarget } from '../../errors.js';
import { newRefreshToken } from '../../oauth/refresh-token-format.js';
import { requestedResource } from '../../oauth/resource-indicator.js';
import { signIdToken } from '../../oidc/id-token.js';
import type { RedeemedCode } from '../../store/grants.js';
import { authenticateCaller } from '../authenticate-caller.js';
import { dpopKeyOf } from '../dpop-binding.js';
import { revokeReused } from '../revocation.js';
import { type GrantHandler, tokenResponse } from '../token-response.js';

// RFC 7636 §4.1: 43 to 128 characters of the unreserved set.
const CODE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

/**
 * RFC 6749 §4.1.3 with PKCE (RFC 7636 §4.6, S256 only). A spent code presented again is reuse, and
 * revokes what it issued, unless it is a retry whose answer was lost: the same client, code,
 * code_verifier and redirect_uri within REFRESH_TOKEN_REUSE_INTERVAL_SECONDS, the pair it was given
 * never used. That retry gets a new pair of the same grant (docs/protocol.md, "Retried exchanges").
 */
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
  const resource = requestedResource(body.resource);
  const dpopJkt = dpopKeyOf(client, body);

  const { config, store, signingKeys } = deps;
  const presented = { codeHash: sha256(code), clientId: client.client_id, redirectUri, codeChallenge: sha256(verifier), resource, dpopJkt };
  const grantId = generateId('grant');
  const jtiSuffix = randomToken(12);
  const refreshToken = newRefreshToken();
  const redeemed = await store.grants.exchangeCode({
    ...presented,
    grantId,
    accessJti: `${grantId}.${jtiSuffix}`,
    refreshTokenHash: sha256(refreshToken),
    lifetimes: config.ttl,
  });

  /** The tokens of `code`'s grant: the access token under the jti chosen above, and an ID token when asked for. */
  const issue = (code: RedeemedCode, grant_id: string) => {
    const { agent_id, model, scope } = code;
    const grant = { grant_id, client_id: client.client_id, agent_id, model };
    deps.events.emit('grant.issued', grant, context);
    // OpenID Connect Core §3.1.3.3: an ID token when the scope asks for one, in OpenID Connect mode.
    const idToken =
      signingKeys && scope.split(' ').includes('openid')
        ? (accessToken: string) => signIdToken(signingKeys, config, { ...code, ...grant }, accessToken)
        : undefined;
    const subject = { ...grant, scope, resource: code.resource, email: code.email, dpop_jkt: dpopJkt ?? undefined };
    return tokenResponse(deps, subject, refreshToken, idToken, jtiSuffix);
  };

  if (!redeemed) {
    const interval = config.refreshTokenReuseIntervalSeconds;
    const retried =
      interval > 0
        ? await store.grants.retryCodeExchange({
            ...presented,
            accessJtiSuffix: jtiSuffix,
            refreshTokenHash: sha256(refreshToken),
            lifetimes: config.ttl,
            reuseIntervalSeconds: interval,
          })
        : undefined;
    if (retried?.issued) return issue(retried, retried.grant_id);
    // A replayed code: its grant is revoked. A retry that a concurrent retry beat revokes nothing.
    if (!retried) await revokeReused(deps, 'code', presented.codeHash, context);
    throw new InvalidGrant('the authorization code is invalid, expired or already used');
  }
  if (!redeemed.agent_active) throw new InvalidGrant('the agent of this authorization is no longer active');
  if (!redeemed.redirect_uri_matches) throw new InvalidGrant('redirect_uri does not match the one of the authorization request');
  if (!redeemed.verifier_matches) throw new InvalidGrant('code_verifier does not match the code_challenge');
  if (!redeemed.dpop_jkt_matches) throw new InvalidGrant('the DPoP proof is not signed with the key the authorization request named (dpop_jkt)');
  // RFC 8707 §2.2: the exchange may repeat the sign-in's resource or leave it out, not name another.
  if (!redeemed.resource_matches) throw new InvalidTarget('the authorization request was not for this resource');
  return issue(redeemed, grantId);
};
