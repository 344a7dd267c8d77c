import { z } from 'zod';
import type { Config } from '../config.js';
import { sha256 } from '../crypto/secrets.js';
import { InvalidRequest } from '../errors.js';
import { grantIdOf } from '../oauth/access-token.js';
import { authenticateClient, type ClientCall } from '../oauth/client-credentials.js';
import { isRefreshTokenFormat } from '../oauth/refresh-token-format.js';
import type { Store } from '../store/index.js';
import { authenticateCaller } from './authenticate-caller.js';
import { isResourceToken } from './resource-tokens.js';
import type { VerifiedAccessToken, VerifiedAccessTokens } from './verified-access-tokens.js';

/** RFC 7662 §2.2, with our `model`. */
export const introspectionResponse = z.object({
  active: z.boolean(),
  sub: z.string().optional(),
  client_id: z.string().optional(),
  scope: z.string().optional(),
  exp: z.number().int().optional(),
  iat: z.number().int().optional(),
  iss: z.string().optional(),
  aud: z.string().optional(),
  jti: z.string().optional(),
  token_type: z.string().optional(),
  model: z.string().optional(),
  /** RFC 9449 §6.2: the DPoP key a bound token is bound to. */
  cnf: z.object({ jkt: z.string() }).optional(),
});
type Answer = z.infer<typeof introspectionResponse>;

/** An answer's JSON text: built here from checked values, so the route sends it as it is. */
export type AnswerText = string;
const INACTIVE: AnswerText = JSON.stringify({ active: false } satisfies Answer);

/** What introspection reads: the asking client with the token (one round trip), and the tokens this process verified. */
export interface IntrospectionDeps {
  config: Pick<Config, 'issuer'>;
  store: Pick<Store, 'clients' | 'grants' | 'resources'>;
  verifiedTokens: VerifiedAccessTokens;
}

const epoch = (date: Date) => Math.floor(date.getTime() / 1000);

/**
 * An active access token's answer depends on its claims alone: serialised once per token, not per call.
 * A DPoP-bound one says so (RFC 9449 §6.2): token_type DPoP, and its cnf claim.
 */
function activeAnswer(token: VerifiedAccessToken): AnswerText {
  const tokenType = token.claims.cnf ? 'DPoP' : 'access_token';
  return (token.activeIntrospection ??= JSON.stringify({ active: true, ...token.claims, token_type: tokenType } satisfies Answer));
}

/**
 * A resource's token (src/tokens/resource-tokens.ts) is answered to the website the resource belongs
 * to, and to the client it was issued to; inactive for anyone else, whatever the token.
 */
async function introspectResourceToken(deps: IntrospectionDeps, call: ClientCall, verified: VerifiedAccessToken): Promise<AnswerText> {
  const { store } = deps;
  const { client_id: asker } = await authenticateCaller(deps, call);
  const { aud, jti, sub, client_id: clientId } = verified.claims;
  if (asker !== clientId && (await store.resources.get(aud))?.client_id !== asker) return INACTIVE;
  const grant = await store.grants.findAccessGrant(grantIdOf(jti), jti);
  return grant?.agent_id === sub && grant.client_id === clientId ? activeAnswer(verified) : INACTIVE;
}

/** A token of the asking client is read along with the client; any other token is inactive for it. */
async function introspectAccessToken(deps: IntrospectionDeps, call: ClientCall, token: string): Promise<AnswerText> {
  const { store, verifiedTokens } = deps;
  const verified = await verifiedTokens.verifyAny(token);
  if (verified && isResourceToken(verified.claims)) return introspectResourceToken(deps, call, verified);
  const { id } = call.credentials;
  if (id === undefined || verified?.claims.client_id !== id) {
    authenticateClient(call, id === undefined ? undefined : await store.clients.getWithSecret(id));
    return INACTIVE;
  }
  const { jti, sub } = verified.claims;
  const read = await store.grants.introspectAccessToken(id, grantIdOf(jti), jti);
  authenticateClient(call, read?.client);
  return read?.token?.agent_id === sub ? activeAnswer(verified) : INACTIVE;
}

/** A refresh token has no jti; its iat and exp are when it was issued and when it expires. */
async function introspectRefreshToken({ config, store }: IntrospectionDeps, call: ClientCall, token: string): Promise<AnswerText> {
  const { id } = call.credentials;
  const read = id === undefined ? undefined : await store.grants.introspectRefreshToken(id, sha256(token));
  authenticateClient(call, read?.client);
  const live = read?.token;
  if (!live) return INACTIVE;
  return JSON.stringify({
    active: true,
    sub: live.agent_id,
    client_id: live.client_id,
    scope: live.scope,
    exp: epoch(live.expires_at),
    iat: epoch(live.created_at),
    iss: config.issuer,
    aud: live.client_id,
    token_type: 'refresh_token',
    model: live.model,
    ...(live.dpop_jkt ? { cnf: { jkt: live.dpop_jkt } } : {}),
  } satisfies Answer);
}

/**
 * RFC 7662: a client learns only about its own tokens; anything else, including a live token of
 * another client, is `{active: false}`. The client authenticates before anything found is used (and
 * before a missing token is refused, as on the other client endpoints).
 */
export async function introspect(deps: IntrospectionDeps, call: ClientCall, token: string | undefined): Promise<AnswerText> {
  const answer = await (token && isRefreshTokenFormat(token) ? introspectRefreshToken : introspectAccessToken)(deps, call, token ?? '');
  if (!token) throw new InvalidRequest('token is required');
  return answer;
}
