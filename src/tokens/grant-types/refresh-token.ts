import { sha256 } from '../../crypto/secrets.js';
import { InvalidGrant, InvalidRequest, InvalidScope, InvalidTarget } from '../../errors.js';
import { authenticateClient } from '../../oauth/client-credentials.js';
import { newRefreshToken } from '../../oauth/refresh-token-format.js';
import { requestedResource } from '../../oauth/resource-indicator.js';
import { scopeTokens } from '../../oauth/scopes.js';
import type { GrantSubject } from '../../store/grants.js';
import { authenticateCaller } from '../authenticate-caller.js';
import { dpopKeyOf } from '../dpop-binding.js';
import { revokeReused } from '../revocation.js';
import { type GrantHandler, tokenResponse } from '../token-response.js';

/** What `parse` returns, or null when it throws: a problem to report once the client has authenticated. */
function valid<T>(parse: () => T): T | null {
  try {
    return parse();
  } catch {
    return null;
  }
}

/**
 * RFC 6749 §6 with rotation (OAuth 2.1 §4.3.1): every use spends the token and issues its
 * successor; a spent token presented again revokes the whole family, unless it is a retry: the
 * token spent last, within REFRESH_TOKEN_REUSE_INTERVAL_SECONDS, its successor never used
 * (RFC 9700 §4.14.2; docs/security.md).
 *
 * A refresh that is in order takes one statement, which checks the client's secret along with the
 * token (as SHA-256 digests: comparing digests tells nothing about a secret) and spends nothing
 * otherwise. Anything else is sorted out afterwards, the client first, as on every client endpoint.
 */
export const refreshTokenGrant: GrantHandler = async (deps, call, body, context) => {
  const { config, store, events } = deps;
  const { grants } = store;
  const { credentials } = call;
  const presented = body.refresh_token;
  const tokenHash = presented && sha256(presented);
  // Any scope the grant holds may be asked again (a resource's may be its own); the statement checks the
  // narrowing. A malformed scope or resource is told only once the client has authenticated (below).
  const requested = valid(() => (body.scope === undefined ? undefined : scopeTokens(body.scope)));
  const resource = valid(() => requestedResource(body.resource));
  const successor = newRefreshToken();
  // A grant bound to a DPoP key needs a proof of that key (checked by the rotation's statement).
  const dpopJkt = body.dpop?.jkt ?? null;

  const grant =
    tokenHash && credentials.id && requested !== null && resource !== null
      ? await grants.rotateRefreshToken({
          tokenHash,
          clientId: credentials.id,
          clientSecretHash: sha256(credentials.secret),
          newTokenHash: sha256(successor),
          lifetimes: config.ttl,
          scope: requested,
          resource,
          dpopJkt,
          dpopNonced: body.dpop?.nonced ?? false,
        })
      : undefined;
  // A narrower scope applies to this access token only; the refresh token keeps its scope (§6).
  const refreshed = ({ grant_id, client_id, agent_id, model, scope, ...forResource }: GrantSubject, asked = requested) => {
    events.emit('grant.refreshed', { grant_id, client_id, agent_id, model }, context);
    const subject = { grant_id, client_id, agent_id, model, scope: asked?.join(' ') ?? scope, ...forResource, dpop_jkt: dpopJkt ?? undefined };
    return tokenResponse(deps, subject, successor);
  };
  if (grant) {
    // The statement compared the secret's digest to spend the token; the client is accepted the usual way.
    authenticateClient(call, grant.client);
    return refreshed(grant);
  }

  const client = await authenticateCaller(deps, call);
  if (!tokenHash) throw new InvalidRequest('refresh_token is required');
  dpopKeyOf(client, body);
  const scope = body.scope === undefined ? undefined : scopeTokens(body.scope);
  const named = requestedResource(body.resource);
  // A wider scope than granted, another resource (RFC 8707 §2.2) or another DPoP key than the grant's is
  // refused without spending the token.
  const live = await grants.findRefreshToken(tokenHash, client.client_id);
  if (live && scope?.some((s) => !live.scope.split(' ').includes(s))) {
    throw new InvalidScope(`scope may narrow the granted scope "${live.scope}", never widen it`);
  }
  if (live && named !== undefined && live.resource !== named) throw new InvalidTarget('the grant does not cover this resource');
  if (live?.dpop_jkt && live.dpop_jkt !== dpopJkt) {
    throw new InvalidGrant('the refresh token is bound to a DPoP key: send a DPoP proof signed with that key');
  }
  const rotation = { tokenHash, clientId: client.client_id, newTokenHash: sha256(successor), lifetimes: config.ttl, scope, resource: named, dpopJkt };
  // A client without a secret (public, private_key_jwt) has authenticated only now: the statement above could not check it.
  if (client.method !== 'client_secret_post') {
    const rotated = await grants.rotateRefreshToken({ ...rotation, clientSecretHash: null, dpopNonced: body.dpop?.nonced ?? false });
    if (rotated) return refreshed(rotated, scope);
  }
  // The token just spent, presented again within the reuse interval: a retry whose answer was lost.
  const { refreshTokenReuseIntervalSeconds } = config;
  const retried =
    refreshTokenReuseIntervalSeconds > 0
      ? await grants.rotateRetriedRefreshToken({ ...rotation, reuseIntervalSeconds: refreshTokenReuseIntervalSeconds })
      : undefined;
  if (retried?.issued) return refreshed(retried, scope);
  // A reused refresh token: its family is revoked. A retry that a concurrent retry of the same token
  // beat is refused, and revokes nothing.
  if (!retried) await revokeReused(deps, 'refresh_token', tokenHash, context);
  throw new InvalidGrant('the refresh token is invalid, expired or revoked');
};
