import { logAudit, logReuse } from '../audit.js';
import { sha256 } from '../crypto/secrets.js';
import { InvalidGrant, InvalidRequest, InvalidScope } from '../errors.js';
import { newRefreshToken } from '../oauth/refresh-token.js';
import { parseScope } from '../oauth/scopes.js';
import { tokenResponse, type GrantHandler } from './token-response.js';

/**
 * RFC 6749 §6 with rotation (OAuth 2.1 §4.3.1): every use spends the token and issues its
 * successor; a spent token presented again revokes the whole family.
 */
export const refreshTokenGrant: GrantHandler = async (request, body) => {
  if (!body.refresh_token) throw new InvalidRequest('refresh_token is required');
  const requested = body.scope === undefined ? undefined : parseScope(body.scope);
  const { services } = request.server;
  const { client } = request;
  const tokenHash = sha256(body.refresh_token);
  const successor = newRefreshToken();

  // A wider scope than granted is refused without spending the token; a narrower one applies to
  // this access token only, the refresh token keeps its scope (§6).
  const { grants } = services.store;
  const grant = await grants.rotateRefreshToken({
    tokenHash,
    clientId: client.client_id,
    newTokenHash: sha256(successor),
    lifetimes: services.config.ttl,
    scope: requested,
  });

  if (!grant) {
    const live = requested && (await grants.findRefreshToken(tokenHash, client.client_id));
    if (live && requested.some((s) => !live.scope.split(' ').includes(s))) {
      throw new InvalidScope(`scope may narrow the granted scope "${live.scope}", never widen it`);
    }
    // A reused refresh token: its family is revoked (the audit trigger records reuse_detected and revoked).
    const revoked = await grants.revokeIfSpent('refresh_token', tokenHash);
    if (revoked) logReuse(request.log, revoked);
    throw new InvalidGrant('the refresh token is invalid, expired or revoked');
  }
  logAudit(request.log, 'refreshed', { grant_id: grant.grant_id, client_id: grant.client_id, agent_id: grant.agent_id, model: grant.model });
  return tokenResponse(request, { ...grant, scope: requested?.join(' ') ?? grant.scope }, successor);
};
