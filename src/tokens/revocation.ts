import { sha256 } from '../crypto/secrets.js';
import { InvalidRequest } from '../errors.js';
import type { EventContext, Events } from '../events/emitter.js';
import { grantIdOf } from '../oauth/access-token.js';
import type { ClientCall } from '../oauth/client-credentials.js';
import { isRefreshTokenFormat } from '../oauth/refresh-token-format.js';
import type { AuditActor } from '../store/audit-log.js';
import type { RevocationLevel } from '../store/grant-records.js';
import type { EndedGrant } from '../store/grants.js';
import type { Store } from '../store/index.js';
import { authenticateCaller } from './authenticate-caller.js';
import type { VerifiedAccessTokens } from './verified-access-tokens.js';

/** What ending grants needs: the store slices `S` that end them, and the events that announce it. */
export interface RevocationDeps<S extends keyof Store = 'grants'> {
  store: Pick<Store, S>;
  events: Events;
}

/**
 * The one place where grants the store has ended (src/store/grants.ts, endGrants) become events:
 * every revocation, whoever asks for it, comes through here.
 */
function announceEnded(events: Events, ended: EndedGrant[], context: EventContext): EndedGrant[] {
  for (const grant of ended) events.emit('grant.ended', grant, context);
  return ended;
}

/**
 * A spent code or refresh token presented again means it leaked: the grant behind it is revoked,
 * and with it every token it issued (RFC 6749 §4.1.2; OAuth 2.1 §4.3.1; RFC 9700 §4.14.2).
 */
export async function revokeReused(deps: RevocationDeps, kind: 'code' | 'refresh_token', hash: string, context: EventContext): Promise<void> {
  announceEnded(deps.events, await deps.store.grants.revokeIfSpent(kind, hash), context);
}

/**
 * Every grant at one level (a grant, an agent, a user by email, a website; an agent's grants with one
 * website, all of an owner's) and the sign-ins in flight there (src/store/grant-records.ts); undefined
 * when there is no such grant, agent, user or website. The admin API, the console (`by` admin) and
 * the owners (`by` owner) revoke through here.
 */
export async function revokeAtLevel(
  deps: RevocationDeps<'grantRecords'>,
  level: RevocationLevel,
  keys: string | string[],
  context: EventContext,
  by: AuditActor = 'admin',
): Promise<EndedGrant[] | undefined> {
  const ended = await deps.store.grantRecords.revoke(level, [keys].flat(), `${by}_${level}`);
  return ended && announceEnded(deps.events, ended, context);
}

/**
 * A new secret for an agent or a website (`rotate`), then, unless `revokeGrants` is false, the kill
 * switch at that level: every grant and every sign-in in flight there ends, on every instance. In
 * that order, so that the old secret can begin nothing that outlives the call. Undefined when there
 * is no such record (nothing revoked then).
 */
export async function rotateSecret<T>(
  deps: RevocationDeps<'grantRecords'>,
  target: { level: 'agent' | 'client'; id: string; revokeGrants: boolean },
  rotate: () => Promise<T | undefined>,
  context: EventContext,
  by: AuditActor = 'admin',
): Promise<T | undefined> {
  const rotated = await rotate();
  if (rotated && target.revokeGrants) await revokeAtLevel(deps, target.level, target.id, context, by);
  return rotated;
}

/** `records` whose secret rotation ends the grants at `level` too, unless asked not to (rotateSecret). */
function rotatingRecords<R extends { rotateSecret(id: string): Promise<unknown> }>(
  deps: RevocationDeps<'grantRecords'>,
  level: 'agent' | 'client',
  records: R,
  context: EventContext,
) {
  return {
    ...records,
    rotateSecret: (id: string, revokeGrants = true) =>
      rotateSecret(deps, { level, id, revokeGrants }, () => records.rotateSecret(id) as ReturnType<R['rotateSecret']>, context),
  };
}

/** The website records as the admin API and the console change them: rotating a secret (rotatingRecords). */
export function clientWrites(deps: RevocationDeps<'clients' | 'grantRecords'>, context: EventContext) {
  return rotatingRecords(deps, 'client', deps.store.clients, context);
}

/**
 * The agent records as the admin API and the console change them: deactivating or deleting an
 * agent ends its grants (src/store/agents.ts), announced here like every other ending; rotating its
 * secret ends them too unless asked not to (rotatingRecords).
 */
export function agentWrites(deps: RevocationDeps<'agents' | 'grantRecords'>, context: EventContext) {
  const { agents } = deps.store;
  return {
    ...rotatingRecords(deps, 'agent', agents, context),
    async update(id: string, patch: Parameters<typeof agents.update>[1]) {
      const updated = await agents.update(id, patch);
      if (updated) announceEnded(deps.events, updated.ended, context);
      return updated;
    },
    async remove(id: string): Promise<boolean> {
      const ended = await agents.remove(id);
      if (ended) announceEnded(deps.events, ended, context);
      return ended !== undefined;
    },
  };
}

/**
 * RFC 7009: a client revokes one of its own tokens; anything else (another client's, unknown,
 * expired, forged) is quietly nothing to revoke. A refresh token takes its whole grant along; an
 * access token is refused until it would have expired, its grant living on.
 */
export async function revokeToken(
  deps: RevocationDeps<'clients' | 'grants'> & { verifiedTokens: VerifiedAccessTokens },
  call: ClientCall,
  token: string | undefined,
  context: EventContext,
): Promise<void> {
  const { client_id: clientId } = await authenticateCaller(deps, call);
  if (!token) throw new InvalidRequest('token is required');
  if (isRefreshTokenFormat(token)) {
    announceEnded(deps.events, await deps.store.grants.revokeRefreshToken(sha256(token), clientId), context);
    return;
  }
  const claims = (await deps.verifiedTokens.verifyAny(token))?.claims;
  if (claims?.client_id !== clientId) return;
  // A resource's token carries no model (docs/protocol.md, "Resources"); the log line then names none.
  await deps.store.grants.revokeAccessToken(claims.jti, new Date(claims.exp * 1000));
  const grant = { grant_id: grantIdOf(claims.jti), client_id: clientId, agent_id: claims.sub, model: claims.model ?? '' };
  deps.events.emit('access-token.revoked', { ...grant, reason: 'client_revocation' }, context);
}
